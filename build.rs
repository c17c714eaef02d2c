//! Build identity for `/api/v1/status/buildinfo`: the commit, branch, time
//! (seconds since the epoch), builder and compiler, as `CAIRN_BUILD_*`
//! environment variables of the compile. Each is "unknown" where it cannot be found (no git, say);
//! `SOURCE_DATE_EPOCH`, when set, fixes the date for reproducible builds.
//! It runs again when the commit or branch changes, not on every build.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let unknown = || "unknown".to_string();
    let revision = output("git", &["rev-parse", "HEAD"]).unwrap_or_else(unknown);
    let branch = output("git", &["rev-parse", "--abbrev-ref", "HEAD"]).unwrap_or_else(unknown);
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    let user = std::env::var("USER")
        .ok()
        .or_else(|| output("whoami", &[]))
        .unwrap_or_else(unknown);
    let host = output("hostname", &[]).unwrap_or_else(unknown);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc = output(&rustc, &["--version"]).unwrap_or_else(unknown);
    println!("cargo:rustc-env=CAIRN_BUILD_REVISION={revision}");
    println!("cargo:rustc-env=CAIRN_BUILD_BRANCH={branch}");
    println!("cargo:rustc-env=CAIRN_BUILD_EPOCH={secs}");
    println!("cargo:rustc-env=CAIRN_BUILD_USER={user}@{host}");
    println!("cargo:rustc-env=CAIRN_BUILD_RUSTC={rustc}");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-env-changed=USER");
    // A new commit or branch changes the identity. Where there is no git
    // directory, naming this file keeps cargo from running it every build.
    println!("cargo:rerun-if-changed=build.rs");
    for path in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        if Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
