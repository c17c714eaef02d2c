//! `cairn check config|rules` and `cairn test rules`: promtool's checks of
//! configuration and rule files and its rule unit tests, with its output and
//! exit codes (0 good, 1 errors), so scripts written for promtool work;
//! `cairn check --storage.path DIR`: every file of a data directory verified,
//! read-only (0 clean, 1 damage found, 2 usage); with `--repair`, damaged
//! parts are put back from a backup (`--from-backup`) where one holds an
//! intact copy, and the rest repaired as the engine would (docs/corruption.md).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use cairn_storage::StorageError;

const USAGE: &str = "usage: cairn check config FILE... | cairn check rules FILE... | cairn test rules FILE... | cairn check --storage.path DIR [--repair [--from-backup DEST]]";

/// Runs the subcommand `args` (after `cairn`); the process exit code.
pub fn main(args: &[String]) -> i32 {
    let files = |from: usize| args[from..].iter().map(PathBuf::from).collect::<Vec<_>>();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["check", "config", _, ..] => check_config(&files(2)),
        ["check", "rules", _, ..] => check_rules(&files(2)),
        ["test", "rules", _, ..] => test_rules(&files(2)),
        ["check", rest @ ..] if rest.iter().any(|a| a.starts_with("--storage.path")) => {
            match StorageCheck::parse(&args[1..]) {
                Some(check) => check.run(),
                None => {
                    eprintln!("{USAGE}");
                    2
                }
            }
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

/// `cairn check --storage.path DIR [--repair [--from-backup DEST]]`.
struct StorageCheck {
    dir: String,
    repair: bool,
    from_backup: Option<String>,
}

impl StorageCheck {
    /// The flags after `check`, each as `--flag value` or `--flag=value`.
    fn parse(args: &[String]) -> Option<Self> {
        let mut check = Self {
            dir: String::new(),
            repair: false,
            from_backup: None,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag, Some(value.to_string())),
                None => (arg.as_str(), None),
            };
            match flag {
                "--repair" if inline.is_none() => check.repair = true,
                "--storage.path" => check.dir = inline.or_else(|| args.next().cloned())?,
                "--from-backup" => check.from_backup = Some(inline.or_else(|| args.next().cloned())?),
                _ => return None,
            }
        }
        (!check.dir.is_empty() && (check.repair || check.from_backup.is_none())).then_some(check)
    }

    fn run(&self) -> i32 {
        let root = PathBuf::from(&self.dir);
        if !root.is_dir() {
            eprintln!("{:?} is not a directory\n{USAGE}", self.dir);
            return 2;
        }
        let report = match print_check(&root) {
            Ok(report) => report,
            Err(code) => return code,
        };
        if report.is_clean() || !self.repair {
            return i32::from(!report.is_clean());
        }
        if let Some(dest) = &self.from_backup {
            match restore_parts(&root, &report, dest) {
                Ok(0) => {}
                Ok(_) => match print_check(&root) {
                    Ok(report) if report.is_clean() => return 0,
                    Ok(_) => {}
                    Err(code) => return code,
                },
                Err(e) => {
                    eprintln!("  FAILED: {e}");
                    return 1;
                }
            }
        }
        match repair_storage(&root) {
            Ok((blocks, samples)) => {
                println!(
                    "REPAIRED: {blocks} damaged block(s) dropped, their {samples} samples recorded as lost; other damaged files quarantined"
                );
                match print_check(&root) {
                    Ok(report) => i32::from(!report.is_clean()),
                    Err(code) => code,
                }
            }
            Err(e) => {
                eprintln!("  FAILED: {e}");
                1
            }
        }
    }
}

/// Puts over each damaged part an intact copy of it from the backups at
/// `dest` (a directory, `file://` or `s3://` URL; S3 settings from the
/// AWS_* environment), where one exists; returns how many.
fn restore_parts(root: &Path, report: &cairn_tsdb::check::Report, dest: &str) -> Result<usize, StorageError> {
    let bucket = cairn_backup::open_destination(dest, &cairn_bucket::BucketConfig::new(""))?;
    let mut restored = 0;
    for damaged in report.damaged.iter().filter(|d| d.kind == "part") {
        let Ok(relative) = damaged.path.strip_prefix(root) else {
            continue;
        };
        let Ok(size) = std::fs::metadata(&damaged.path).map(|m| m.len()) else {
            continue;
        };
        let relative = relative.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/");
        let found = cairn_backup::restore_file(&bucket, &relative, size, &damaged.path, |copy| {
            cairn_tsdb::check::is_intact_copy(copy, &damaged.path)
        })?;
        if let Some(backup) = found {
            println!("RESTORED {} from backup {backup}", damaged.path.display());
            restored += 1;
        }
    }
    Ok(restored)
}

/// Prints what `check_dir` finds, and returns it.
fn print_check(root: &Path) -> Result<cairn_tsdb::check::Report, i32> {
    match cairn_tsdb::check::check_dir(root) {
        Ok(report) => {
            for d in &report.damaged {
                println!("DAMAGED {} ({}): {}", d.path.display(), d.kind, d.reason);
            }
            println!("{}", report.summary());
            Ok(report)
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
fn repair_storage(root: &Path) -> Result<(usize, u64), StorageError> {
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
