//! `cairn check config|rules` and `cairn test rules`: promtool's checks of
//! configuration and rule files and its rule unit tests, with its output and
//! exit codes (0 good, 1 errors), so scripts written for promtool work;
//! `cairn check --storage.path DIR`: every file of a data directory verified,
//! read-only (0 clean, 1 damage found, 2 usage).

use std::io::Write as _;
use std::path::PathBuf;

const USAGE: &str = "usage: cairn check config FILE... | cairn check rules FILE... | cairn test rules FILE... | cairn check --storage.path DIR";

/// Runs the subcommand `args` (after `cairn`); the process exit code.
pub fn main(args: &[String]) -> i32 {
    let files = |from: usize| args[from..].iter().map(PathBuf::from).collect::<Vec<_>>();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["check", "config", _, ..] => check_config(&files(2)),
        ["check", "rules", _, ..] => check_rules(&files(2)),
        ["test", "rules", _, ..] => test_rules(&files(2)),
        ["check", "--storage.path", dir] => check_storage(dir),
        ["check", flag] if flag.starts_with("--storage.path=") => check_storage(&flag["--storage.path=".len()..]),
        // Asked for, the usage is an answer, not an error.
        ["check" | "test", "--help" | "-h"] => {
            println!("{USAGE}");
            0
        }
        _ => {
            eprintln!("{USAGE}");
            2
        }
    }
}

fn check_config(files: &[PathBuf]) -> i32 {
    let mut code = 0;
    for file in files {
        println!("Checking {}", file.display());
        match crate::check_config(file) {
            Ok((_, rule_files)) => {
                println!(" SUCCESS: {} is valid prometheus config file syntax", file.display());
                println!();
                if !rule_files.is_empty() {
                    code = code.max(check_rules(&rule_files));
                }
            }
            Err(e) => {
                eprintln!("  FAILED: {e}");
                println!();
                code = 1;
            }
        }
    }
    code
}

fn check_rules(files: &[PathBuf]) -> i32 {
    let (out, err, code) = cairn_rules::render_rule_checks(&cairn_rules::check_rule_files(files), false);
    print!("{out}");
    eprint!("{err}");
    let _ = std::io::stdout().flush();
    code
}

fn test_rules(files: &[PathBuf]) -> i32 {
    let mut code = 0;
    for file in files {
        println!("Unit Testing:  {}", file.display());
        match cairn_rules::run_rule_tests(file) {
            Ok(report) if report.passed() => println!("  SUCCESS\n"),
            Ok(report) => {
                eprintln!("  FAILED:");
                for f in &report.failures {
                    eprintln!("{f}");
                }
                code = 1;
            }
            Err(errors) => {
                eprintln!("  FAILED:");
                for e in &errors {
                    eprintln!("    {e}");
                }
                code = 1;
            }
        }
    }
    code
}

fn check_storage(dir: &str) -> i32 {
    let root = PathBuf::from(dir);
    if dir.is_empty() || !root.is_dir() {
        eprintln!("{dir:?} is not a directory\n{USAGE}");
        return 2;
    }
    match cairn_tsdb::check::check_dir(&root) {
        Ok(report) => {
            for d in &report.damaged {
                println!("DAMAGED {} ({}): {}", d.path.display(), d.kind, d.reason);
            }
            println!("{}", report.summary());
            i32::from(!report.is_clean())
        }
        Err(e) => {
            eprintln!("  FAILED: {e}");
            1
        }
    }
}
