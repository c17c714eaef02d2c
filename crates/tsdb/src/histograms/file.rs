//! The histogram file format (docs/format/part.md): written a block at
//! a time, read a chunk at a time, checked without the store.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use cairn_codec::varint::{get_uvarint, put_uvarint};
use cairn_codec::{HistogramValue, decode_histograms, encode_histograms};
use cairn_storage::StorageError;

use super::HistogramFile;

const FILE_MAGIC: &[u8; 4] = b"CHST";
/// Version 1 counted its blocks up front; version 2 lists them up to the
/// checksum, so a merge can write blocks as it makes them.
const FILE_VERSION: u32 = 2;

/// The file of the histograms a flush at WAL segment `seq` wrote.
pub(super) fn file_name(seq: u64) -> String {
    format!("hist-{seq:020}.chist")
}

/// The WAL segment of a histogram file's name.
pub fn file_seq(name: &str) -> Option<u64> {
    name.strip_prefix("hist-")?.strip_suffix(".chist")?.parse().ok()
}

/// A block's place in its file, as the file's directory lists it.
#[derive(Debug, PartialEq)]
pub(super) struct Entry {
    pub(super) id: u64,
    pub(super) mint: i64,
    pub(super) maxt: i64,
    pub(super) bytes: Range<u64>,
}

/// Some of one series' histograms encoded for a new file.
pub(super) struct Encoded {
    pub(super) id: u64,
    pub(super) mint: i64,
    pub(super) maxt: i64,
    pub(super) bytes: Vec<u8>,
}

impl Encoded {
    pub(super) fn new(id: u64, ts: &[i64], hs: &[HistogramValue]) -> Self {
        let mut bytes = Vec::new();
        encode_histograms(&mut bytes, ts, hs);
        Encoded {
            id,
            mint: ts.first().copied().unwrap_or(0),
            maxt: ts.last().copied().unwrap_or(0),
            bytes,
        }
    }
}

/// Writes the histogram file of WAL segment `seq` in `dir` atomically, of
/// the blocks `fill` adds, and opens it for reads. `before_rename` runs
/// once every block is written, before the file takes its name.
pub(super) fn write_file(
    dir: &Path,
    seq: u64,
    fill: impl FnOnce(&mut FileWriter<'_>) -> Result<(), StorageError>,
    before_rename: impl FnOnce() -> Result<(), StorageError>,
) -> Result<(Arc<HistogramFile>, Vec<Entry>), StorageError> {
    let path = dir.join(file_name(seq));
    let entries = crate::index::write_atomically_with(&path, |out| {
        let mut w = FileWriter::start(out, &path)?;
        fill(&mut w)?;
        let entries = w.finish()?;
        before_rename()?;
        Ok(entries)
    })?;
    let file = File::open(&path).map_err(StorageError::io("open", &path))?;
    let len = file.metadata().map_err(StorageError::io("stat", &path))?.len();
    Ok((Arc::new(HistogramFile { seq, path, file, len }), entries))
}

/// Writes `magic "CHST" | version:u32 LE = 2 | (id:u64 LE | varint(mint) |
/// varint(maxt) | uvarint(len) | block[len])* | crc32c:u32 LE` (of all
/// before) a block at a time, keeping where each lies in the file.
pub(super) struct FileWriter<'a> {
    out: Checksummed<'a>,
    entries: Vec<Entry>,
    head: Vec<u8>,
}

impl<'a> FileWriter<'a> {
    fn start(out: &'a mut dyn std::io::Write, path: &'a Path) -> Result<Self, StorageError> {
        let mut out = Checksummed {
            out,
            path,
            crc: 0,
            written: 0,
        };
        out.write(FILE_MAGIC)?;
        out.write(&FILE_VERSION.to_le_bytes())?;
        Ok(Self {
            out,
            entries: Vec::new(),
            head: Vec::new(),
        })
    }

    /// Adds a block: series by increasing id, a series' blocks by
    /// increasing time.
    pub(super) fn add(&mut self, b: &Encoded) -> Result<(), StorageError> {
        self.head.clear();
        self.head.extend_from_slice(&b.id.to_le_bytes());
        cairn_codec::varint::put_varint(&mut self.head, b.mint);
        cairn_codec::varint::put_varint(&mut self.head, b.maxt);
        put_uvarint(&mut self.head, b.bytes.len() as u64);
        self.out.write(&self.head)?;
        let start = self.out.written;
        self.out.write(&b.bytes)?;
        self.entries.push(Entry {
            id: b.id,
            mint: b.mint,
            maxt: b.maxt,
            bytes: start..self.out.written,
        });
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<Entry>, StorageError> {
        let crc = self.out.crc.to_le_bytes();
        self.out.write(&crc)?;
        Ok(self.entries)
    }
}

/// A writer that keeps the CRC-32C and the count of what went through.
struct Checksummed<'a> {
    out: &'a mut dyn std::io::Write,
    /// What errors name.
    path: &'a Path,
    crc: u32,
    written: u64,
}

impl Checksummed<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        self.out
            .write_all(bytes)
            .map_err(StorageError::io("write", self.path))?;
        self.crc = cairn_codec::crc32c_append(self.crc, bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// The file `blocks` make, and where each lies in it.
#[cfg(test)]
fn encode_file(blocks: &[Encoded]) -> (Vec<u8>, Vec<Entry>) {
    let mut out = Vec::new();
    let mut w = FileWriter::start(&mut out, Path::new("<memory>")).expect("writing to memory");
    for b in blocks {
        w.add(b).expect("writing to memory");
    }
    let entries = w.finish().expect("writing to memory");
    (out, entries)
}

/// Where the blocks of a histogram file lie; never panics.
pub(super) fn decode_file(bytes: &[u8]) -> Result<Vec<Entry>, &'static str> {
    // A slice fails to read only where it ends, which the lengths rule out.
    decode_from(bytes, bytes.len() as u64).unwrap_or(Err("truncated histogram file"))
}

/// Where the blocks of a histogram file of `len` bytes lie, read from `src` front to
/// back, a chunk at a time: a merged file can be larger than memory should
/// hold at once. The outer error is the reader's; the inner one, damage.
pub(super) fn decode_from(src: impl Read, len: u64) -> std::io::Result<Result<Vec<Entry>, &'static str>> {
    let Some(body_len) = len.checked_sub(4) else {
        return Ok(Err("truncated histogram file"));
    };
    let mut scan = Scanner::new(src, body_len);
    let head = scan.peek(FILE_MAGIC.len() + 4 + MAX_VARINT)?;
    let Some(rest) = head.strip_prefix(FILE_MAGIC) else {
        return Ok(Err("not a histogram file"));
    };
    let Some((version, rest)) = rest.split_first_chunk::<4>() else {
        return Ok(Err("truncated histogram file"));
    };
    // How many blocks a version 1 file says it holds; a version 2 file's
    // end up to its checksum.
    let (count, rest) = match u32::from_le_bytes(*version) {
        1 => match get_uvarint(rest) {
            Ok((n, rest)) => (Some(n), rest),
            Err(_) => return Ok(Err("bad histogram block count")),
        },
        FILE_VERSION => (None, rest),
        _ => return Ok(Err("unknown histogram file version")),
    };
    let used = head.len() - rest.len();
    scan.consume(used);
    // A block takes 11 bytes at least (id, three one-byte varints).
    if count.is_some_and(|n| n > body_len / 11) {
        return Ok(Err("histogram block count exceeds file"));
    }
    let mut out = Vec::with_capacity(count.unwrap_or(0) as usize);
    while count.map_or(!scan.at_end()?, |n| (out.len() as u64) < n) {
        let header = scan.peek(BLOCK_HEADER_MAX)?;
        let parsed = (|| {
            let (id, r) = header.split_first_chunk::<8>().ok_or("truncated histogram block")?;
            let (mint, r) = cairn_codec::varint::get_varint(r).map_err(|_| "bad histogram block mint")?;
            let (maxt, r) = cairn_codec::varint::get_varint(r).map_err(|_| "bad histogram block maxt")?;
            let (len, r) = get_uvarint(r).map_err(|_| "bad histogram block length")?;
            Ok((u64::from_le_bytes(*id), mint, maxt, len, header.len() - r.len()))
        })();
        let (id, mint, maxt, len, used) = match parsed {
            Ok(p) => p,
            Err(reason) => return Ok(Err(reason)),
        };
        scan.consume(used);
        let start = scan.offset;
        if !scan.skip(len)? {
            return Ok(Err("histogram block overruns file"));
        }
        out.push(Entry {
            id,
            mint,
            maxt,
            bytes: start..start + len,
        });
    }
    if !scan.at_end()? {
        return Ok(Err("trailing bytes in histogram file"));
    }
    let mut crc = [0u8; 4];
    scan.src.read_exact(&mut crc)?;
    if scan.crc != u32::from_le_bytes(crc) {
        return Ok(Err("histogram file checksum mismatch"));
    }
    Ok(Ok(out))
}

/// The longest varint.
const MAX_VARINT: usize = 10;
/// The longest block header: id, mint, maxt and length.
const BLOCK_HEADER_MAX: usize = 8 + 3 * MAX_VARINT;
/// How much of a file [`Scanner`] reads at once.
const SCAN_CHUNK: usize = 1 << 20;

/// Reads the `body_len` bytes of a file body in chunks, checksumming each
/// byte as it is consumed.
struct Scanner<R> {
    src: R,
    buf: Vec<u8>,
    /// The first byte of `buf` not consumed yet.
    start: usize,
    /// Body bytes not read into `buf` yet.
    unread: u64,
    /// The file offset of `buf[start]`.
    offset: u64,
    crc: u32,
}

impl<R: Read> Scanner<R> {
    fn new(src: R, body_len: u64) -> Self {
        Self {
            src,
            buf: Vec::new(),
            start: 0,
            unread: body_len,
            offset: 0,
            crc: 0,
        }
    }

    /// The bytes from the current offset on: at least `want` of them
    /// (at most [`SCAN_CHUNK`]), fewer only where the body ends.
    fn peek(&mut self, want: usize) -> std::io::Result<&[u8]> {
        if self.buf.len() - self.start < want && self.unread > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
            let have = self.buf.len();
            let more = self.unread.min((SCAN_CHUNK - have) as u64) as usize;
            self.buf.resize(have + more, 0);
            self.src.read_exact(&mut self.buf[have..])?;
            self.unread -= more as u64;
        }
        Ok(&self.buf[self.start..])
    }

    /// Consumes `n` bytes of what [`Self::peek`] returned.
    fn consume(&mut self, n: usize) {
        self.crc = cairn_codec::crc32c_append(self.crc, &self.buf[self.start..self.start + n]);
        self.start += n;
        self.offset += n as u64;
    }

    /// Consumes `n` bytes, however many chunks they span; false when the
    /// body ends first.
    fn skip(&mut self, mut n: u64) -> std::io::Result<bool> {
        while n > 0 {
            let have = self.peek(1)?.len();
            if have == 0 {
                return Ok(false);
            }
            let take = n.min(have as u64) as usize;
            self.consume(take);
            n -= take as u64;
        }
        Ok(true)
    }

    fn at_end(&mut self) -> std::io::Result<bool> {
        Ok(self.peek(1)?.is_empty())
    }
}

/// Checks a histogram file whole: its checksum and every block's
/// histograms, reading a chunk and a block at a time. Returns how many
/// blocks it holds.
pub fn check_file(path: &Path) -> Result<usize, String> {
    fn cannot(action: &'static str) -> impl Fn(std::io::Error) -> String {
        move |e| format!("cannot {action}: {e}")
    }
    let file = File::open(path).map_err(cannot("open"))?;
    let len = file.metadata().map_err(cannot("stat"))?.len();
    let entries = decode_from(&file, len).map_err(cannot("read"))??;
    let mut block = Vec::new();
    for e in &entries {
        let size = usize::try_from(e.bytes.end - e.bytes.start).map_err(|_| "histogram block too large")?;
        block.resize(size, 0);
        file.read_exact_at(&mut block, e.bytes.start).map_err(cannot("read"))?;
        check_block(e, &block)?;
    }
    Ok(entries.len())
}

/// [`check_file`] of a file's bytes; never panics.
pub fn check_bytes(bytes: &[u8]) -> Result<usize, String> {
    let entries = decode_file(bytes)?;
    for e in &entries {
        let block = bytes
            .get(e.bytes.start as usize..e.bytes.end as usize)
            .ok_or("histogram block overruns file")?;
        check_block(e, block)?;
    }
    Ok(entries.len())
}

fn check_block(e: &Entry, block: &[u8]) -> Result<(), String> {
    let (mut ts, mut hs) = (Vec::new(), Vec::new());
    decode_histograms(block, &mut ts, &mut hs).map_err(|err| {
        format!(
            "histogram block of series {:016x} at offset {}: {err}",
            e.id, e.bytes.start
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::h;
    use super::super::to_value;
    use super::*;

    /// Files of version 1 (a block count up front) still open.
    #[test]
    fn version_1_files_still_decode() {
        let blocks: Vec<Encoded> = (0..3u64)
            .map(|id| Encoded::new(id, &[id as i64 * 10], &[to_value(&h(id as f64))]))
            .collect();
        let (v2, entries) = encode_file(&blocks);
        let mut v1 = FILE_MAGIC.to_vec();
        v1.extend_from_slice(&1u32.to_le_bytes());
        put_uvarint(&mut v1, blocks.len() as u64);
        let shift = v1.len() as u64 - 8;
        v1.extend_from_slice(&v2[8..v2.len() - 4]);
        v1.extend_from_slice(&cairn_codec::crc32c_append(0, &v1).to_le_bytes());
        let decoded = decode_file(&v1).unwrap();
        let shifted: Vec<Range<u64>> = entries
            .iter()
            .map(|e| e.bytes.start + shift..e.bytes.end + shift)
            .collect();
        assert_eq!(decoded.iter().map(|e| e.bytes.clone()).collect::<Vec<_>>(), shifted);
        // A count larger than the blocks there is damage.
        v1[8] = 4;
        let len = v1.len();
        let crc = cairn_codec::crc32c_append(0, &v1[..len - 4]).to_le_bytes();
        v1[len - 4..].copy_from_slice(&crc);
        assert!(decode_file(&v1).is_err());
        assert_eq!(decode_file(&v2).unwrap(), entries);
    }
    /// A file of many chunks (blocks straddling the chunk boundaries) reads
    /// from a file as it does from memory, and damage past the first chunk
    /// is found.
    #[test]
    fn a_file_larger_than_a_read_chunk_decodes_chunk_by_chunk() {
        let blocks: Vec<Encoded> = (0..3000u64)
            .map(|id| Encoded {
                id,
                mint: id as i64,
                maxt: id as i64 + 7,
                bytes: vec![(id % 251) as u8; 997],
            })
            .collect();
        let (bytes, entries) = encode_file(&blocks);
        assert!(bytes.len() > 2 * SCAN_CHUNK);
        let decoded = decode_from(&bytes[..], bytes.len() as u64).unwrap().unwrap();
        let key = |e: &Entry| (e.id, e.mint, e.maxt, e.bytes.clone());
        assert_eq!(
            decoded.iter().map(key).collect::<Vec<_>>(),
            entries.iter().map(key).collect::<Vec<_>>()
        );
        let mut bad = bytes.clone();
        bad[SCAN_CHUNK + SCAN_CHUNK / 2] ^= 1;
        assert_eq!(
            decode_from(&bad[..], bad.len() as u64).unwrap().err(),
            Some("histogram file checksum mismatch")
        );
    }
}
