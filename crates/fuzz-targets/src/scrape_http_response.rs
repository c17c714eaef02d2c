//! A target's answer to a scrape, read by the scrape loops' HTTP/1.1 client
//! from arbitrary bytes: it must return, never panic; what it reads must
//! not depend on how the bytes arrive or on a limit it stays under; and a
//! body it read, sent again with its length, reads back the same.

use cairn_scrape::http1::read_response;

pub fn scrape_http_response(data: &[u8]) {
    let whole = read_response(data, usize::MAX, u64::MAX);
    for step in [1, 7, 4096] {
        assert_eq!(
            read_response(data, step, u64::MAX),
            whole,
            "read {step} bytes at a time"
        );
    }
    let Ok((status, body)) = whole else {
        let _ = read_response(data, 1, 16);
        return;
    };
    if let Ok(limited) = read_response(data, 1, body.len() as u64 + 1) {
        assert_eq!(limited, (status, body.clone()), "a limit the body stays under");
    }
    // A status is three digits, so 0 is written `000`.
    let mut again = format!("HTTP/1.1 {status:03} X\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    again.extend_from_slice(&body);
    assert_eq!(read_response(&again, 3, u64::MAX), Ok((status, body)));
}
