//! Histogram files must check or fail cleanly, never panic, whatever the
//! bytes: both arbitrary bytes, and the input framed as a file (magic,
//! version 1 or 2 by the first byte, the rest as its entries, checksummed),
//! which gets past the checksum to the entries and their codec blocks.

use cairn_tsdb::formats::check_histogram_file;

pub fn tsdb_histogram_file(data: &[u8]) {
    check(data);
    if let Some((&first, entries)) = data.split_first() {
        let mut file = b"CHST".to_vec();
        file.extend_from_slice(&(1 + u32::from(first & 1)).to_le_bytes());
        file.extend_from_slice(entries);
        let crc = cairn_codec::crc32c_append(0, &file);
        file.extend_from_slice(&crc.to_le_bytes());
        check(&file);
    }
}

fn check(file: &[u8]) {
    if let Ok(blocks) = check_histogram_file(file) {
        // An entry takes 12 bytes at least (id, three varints, a block's
        // tag), beside the magic, version and checksum.
        assert!(
            12 + 12 * blocks <= file.len(),
            "{blocks} blocks in {} bytes",
            file.len()
        );
    }
}
