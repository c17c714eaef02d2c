//! `cairn check config|rules` and `cairn test rules`: promtool's checks of
//! configuration and rule files and its rule unit tests, with its output and
//! exit codes (0 good, 1 errors), so scripts written for promtool work;
//! `cairn check --storage.path DIR`: every file of a data directory verified,
//! read-only (0 clean, 1 damage found, 2 usage); with `--repair`, the damage
//! found is repaired as the engine would (see docs/corruption.md).

use std::io::Write as _;
use std::path::PathBuf;

const USAGE: &str = "usage: cairn check config FILE... | cairn check rules FILE... | cairn test rules FILE... | cairn check --storage.path DIR [--repair]";

/// Runs the subcommand `args` (after `cairn`); the process exit code.
pub fn main(args: &[String]) -> i32 {
    let files = |from: usize| args[from..].iter().map(PathBuf::from).collect::<Vec<_>>();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["check", "config", _, ..] => check_config(&files(2)),
        ["check", "rules", _, ..] => check_rules(&files(2)),
        ["test", "rules", _, ..] => test_rules(&files(2)),
        ["check", "--storage.path", dir] => check_storage(dir, false),
        ["check", "--storage.path", dir, "--repair"] => check_storage(dir, true),
        ["check", flag] if flag.starts_with("--storage.path=") => {
            check_storage(&flag["--storage.path=".len()..], false)
        }
        ["check", flag, "--repair"] if flag.starts_with("--storage.path=") => {
            check_storage(&flag["--storage.path=".len()..], true)
        }
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

fn check_storage(dir: &str, repair: bool) -> i32 {
    let root = PathBuf::from(dir);
    if dir.is_empty() || !root.is_dir() {
        eprintln!("{dir:?} is not a directory\n{USAGE}");
        return 2;
    }
    let checked = match print_check(&root) {
        Ok(clean) => clean,
        Err(code) => return code,
    };
    if checked || !repair {
        return i32::from(!checked);
    }
    match repair_storage(&root) {
        Ok((blocks, samples)) => {
            println!(
                "REPAIRED: {blocks} damaged block(s) dropped, their {samples} samples recorded as lost; other damaged files quarantined"
            );
            match print_check(&root) {
                Ok(clean) => i32::from(!clean),
                Err(code) => code,
            }
        }
        Err(e) => {
            eprintln!("  FAILED: {e}");
            1
        }
    }
}

/// Prints what `check_dir` finds; whether the directory is clean.
fn print_check(root: &std::path::Path) -> Result<bool, i32> {
    match cairn_tsdb::check::check_dir(root) {
        Ok(report) => {
            for d in &report.damaged {
                println!("DAMAGED {} ({}): {}", d.path.display(), d.kind, d.reason);
            }
            println!("{}", report.summary());
            Ok(report.is_clean())
        }
        Err(e) => {
            eprintln!("  FAILED: {e}");
            Err(1)
        }
    }
}

/// Opens every tenant's engine of `root`, which quarantines what is damaged
/// at open, and rewrites the parts with damaged blocks without them. Nothing
/// is dropped for age: a repair keeps whatever retention would.
fn repair_storage(root: &std::path::Path) -> Result<(usize, u64), cairn_storage::StorageError> {
    let keep_all = std::time::Duration::from_secs(1000 * 365 * 86_400);
    let mut config = cairn_tsdb::Config::new(root);
    config.background = false;
    config.retention = keep_all;
    let settings: cairn_tsdb::SettingsOf = std::sync::Arc::new(move |_| cairn_tsdb::TenantSettings {
        retention: Some(keep_all),
        ..Default::default()
    });
    let tenants = cairn_tsdb::TsdbTenants::open(config, settings)?;
    let (mut blocks, mut samples) = (0, 0);
    for (_, engine) in tenants.engines() {
        let (b, s) = engine.repair()?;
        blocks += b;
        samples += s;
    }
    tenants.close()?;
    Ok((blocks, samples))
}
