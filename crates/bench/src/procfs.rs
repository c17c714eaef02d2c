//! Process and directory measurements from `/proc` and the filesystem.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Clock ticks per second for `/proc/<pid>/stat` times (`getconf CLK_TCK`,
/// 100 if that fails).
pub fn clk_tck() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// User + system CPU seconds of `pid` so far.
pub fn cpu_seconds(pid: u32, tck: u64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name: state is field 3, so
    // utime (14) and stime (15) are at 11 and 12.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / tck as f64)
}

/// [`cpu_seconds`] summed over several processes (`None` for none, or
/// when one cannot be read).
pub fn cpu_seconds_of(pids: &[u32], tck: u64) -> Option<f64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| cpu_seconds(p, tck)).sum()
}

/// VmRSS summed over several processes, in bytes.
pub fn rss_of(pids: &[u32]) -> Option<u64> {
    if pids.is_empty() {
        return None;
    }
    pids.iter().map(|&p| rss(p).map(|(r, _)| r)).sum()
}

/// `(VmRSS, VmHWM)` of `pid` in bytes.
pub fn rss(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// [`du_bytes`] summed over several directories (`None` for none).
pub fn du_bytes_of(dirs: &[std::path::PathBuf]) -> Option<u64> {
    (!dirs.is_empty()).then(|| dirs.iter().map(|d| du_bytes(d)).sum())
}

/// Allocated bytes under `dir` (as `du -s --block-size=1` counts them).
pub fn du_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else { continue };
            total += m.blocks() * 512;
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_process() {
        let pid = std::process::id();
        let tck = clk_tck();
        assert!(tck > 0);
        assert!(cpu_seconds(pid, tck).is_some());
        let (rss, hwm) = rss(pid).unwrap();
        assert!(rss > 0 && hwm >= rss);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![1u8; 10_000]).unwrap();
        assert!(du_bytes(dir.path()) >= 10_000);
    }
}
