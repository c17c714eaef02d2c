//! Remote read request decoding of arbitrary bytes (snappy-compressed, and
//! as the protobuf itself once compressed): it must return, never panic or
//! allocate past the request limit; whatever decodes must give its response
//! type and matchers without panicking, and re-encode to the same request.
//! The same bytes read as a streamed answer's frames must return too, and
//! each frame read must write a frame that reads back as it.

use cairn_protocols::remote_read::{ReadRequest, decode_request, put_frame, read_frame};
use prost::Message;

pub fn remote_read(data: &[u8]) {
    let mut stream = data;
    while let Ok((frame, rest)) = read_frame(stream) {
        let mut again = Vec::new();
        put_frame(&mut again, &frame);
        assert_eq!(read_frame(&again).expect("a written frame reads").0, frame);
        stream = rest;
    }
    let compressed = snap::raw::Encoder::new().compress_vec(data).expect("compressible");
    for body in [data, compressed.as_slice()] {
        let Ok(request) = decode_request(body) else {
            continue;
        };
        let _ = request.response_type();
        for q in &request.queries {
            let _ = q.matchers();
        }
        let again = snap::raw::Encoder::new()
            .compress_vec(&request.encode_to_vec())
            .expect("compressible");
        let back: ReadRequest = decode_request(&again).expect("re-encoded request decodes");
        assert_eq!(back, request);
    }
}
