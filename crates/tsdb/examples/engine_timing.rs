//! Times engine work on a copy of a data directory, on one thread, for
//! profiling without a live server (docs/benchmarks.md has the runs):
//!
//! ```text
//! cargo run --release -p cairn-tsdb --example engine_timing -- compact DIR
//! cargo run --release -p cairn-tsdb --example engine_timing -- select DIR MAXT_MS [newest]
//! cargo run --release -p cairn-tsdb --example engine_timing -- open DIR
//! ```
//!
//! `compact` merges every partition's parts into one (it rewrites DIR: use a
//! copy). `select` reads four node_exporter metrics over the 5 minutes up to
//! MAXT_MS five times, as alert rules do (`newest`: asking only for each
//! series' newest sample, as an instant selector does). `open` reports the
//! resident memory of the opened engine.

use cairn_model::{MatchOp, Matcher};
use cairn_storage::{Queryable, SelectHints};
use cairn_tsdb::{Config, Tsdb};

const METRICS: [&str; 4] = [
    "node_memory_MemAvailable_bytes",
    "node_network_receive_bytes_total",
    "node_cpu_seconds_total",
    "node_filesystem_avail_bytes",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(what), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: engine_timing compact|select|open DIR [MAXT_MS [newest]]");
        std::process::exit(2);
    };
    let mut config = Config::new(dir);
    config.background = false;
    let db = Tsdb::open(config).expect("open");
    let cpu = cpu_time::ThreadTime::now();
    match what.as_str() {
        "compact" => {
            db.compact().expect("compact");
            println!("compact: {:?} CPU", cpu.elapsed());
        }
        "select" => {
            let maxt: i64 = args.get(2).and_then(|t| t.parse().ok()).expect("MAXT_MS");
            let hints = SelectHints {
                newest_only: args.get(3).is_some_and(|a| a == "newest"),
                ..SelectHints::default()
            };
            let (mut series, mut samples) = (0, 0);
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            for _ in 0..5 {
                for metric in METRICS {
                    let querier = db.querier(maxt - 300_000, maxt).expect("querier");
                    let name = Matcher::new(MatchOp::Equal, "__name__", metric).expect("matcher");
                    for s in querier.select(&hints, &[name]).expect("select") {
                        let mut s = s.expect("series");
                        series += 1;
                        samples += s.samples.read_into(&mut ts, &mut vs).expect("samples").len();
                    }
                }
            }
            println!("select: {:?} CPU, {series} series, {samples} samples", cpu.elapsed());
        }
        "open" => {
            let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
            for line in status
                .lines()
                .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
            {
                println!("{line}");
            }
        }
        other => {
            eprintln!("unknown command {other}");
            std::process::exit(2);
        }
    }
}
