//! VictoriaMetrics' native format of arbitrary bytes: reading must end in
//! blocks or an error, never a panic or an allocation beyond the format's
//! bounds; kept samples lie in the stream's time range, in order; and what
//! was read, written back, reads back as the same series with the same
//! samples (a value only VictoriaMetrics' rounding can hold within twelve
//! significant digits).

use cairn_model::{Labels, Sample, is_stale_nan};
use cairn_protocols::vm_native::{NativeReader, write_header, write_series};

pub fn vm_native(data: &[u8]) {
    let Ok(mut reader) = NativeReader::new(data) else {
        return;
    };
    let (min_t, max_t) = reader.time_range();
    let mut read = Vec::new();
    while let Ok(Some(block)) = reader.next_block() {
        assert!(block.samples.iter().all(|s| (min_t..=max_t).contains(&s.t)));
        assert!(block.samples.is_sorted_by_key(|s| s.t));
        if let Ok(labels) = Labels::new(block.labels)
            && !block.samples.is_empty()
        {
            read.push((labels, block.samples));
        }
    }
    let mut stream = Vec::new();
    write_header(&mut stream, min_t, max_t);
    for (labels, samples) in &read {
        let ts: Vec<i64> = samples.iter().map(|s| s.t).collect();
        let vs: Vec<f64> = samples.iter().map(|s| s.v).collect();
        write_series(&mut stream, labels, &ts, &vs);
    }
    let mut again = NativeReader::new(stream.as_slice()).expect("a written header reads");
    for (labels, samples) in &read {
        let want: Vec<&Sample> = samples.iter().filter(|s| !s.v.is_nan() || is_stale_nan(s.v)).collect();
        let mut got = Vec::new();
        while got.len() < want.len() {
            let block = again
                .next_block()
                .expect("written blocks read")
                .expect("a block per written run");
            assert_eq!(&Labels::new(block.labels).expect("written labels"), labels);
            got.extend(block.samples);
        }
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.t, w.t);
            let close = g.v == w.v || (is_stale_nan(g.v) && is_stale_nan(w.v)) || ((g.v - w.v) / w.v).abs() < 1e-11;
            assert!(close, "{} became {}", w.v, g.v);
        }
    }
    assert!(again.next_block().expect("no trailing bytes").is_none());
}
