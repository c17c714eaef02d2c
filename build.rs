//! Build identity for `/api/v1/status/buildinfo`: the commit, branch, date,
//! builder and compiler, as `CAIRN_BUILD_*` environment variables of the
//! compile. Each is "unknown" where it cannot be found (no git, say);
//! `SOURCE_DATE_EPOCH`, when set, fixes the date for reproducible builds.

use std::process::Command;

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let unknown = || "unknown".to_string();
    let revision = output("git", &["rev-parse", "HEAD"]).unwrap_or_else(unknown);
    let branch = output("git", &["rev-parse", "--abbrev-ref", "HEAD"]).unwrap_or_else(unknown);
    let date = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(epoch) => output("date", &["-u", "-d", &format!("@{epoch}"), "+%Y%m%d-%H:%M:%S"]),
        Err(_) => output("date", &["-u", "+%Y%m%d-%H:%M:%S"]),
    }
    .unwrap_or_else(unknown);
    let user = std::env::var("USER")
        .ok()
        .or_else(|| output("whoami", &[]))
        .unwrap_or_else(unknown);
    let host = output("hostname", &[]).unwrap_or_else(unknown);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc = output(&rustc, &["--version"]).unwrap_or_else(unknown);
    println!("cargo:rustc-env=CAIRN_BUILD_REVISION={revision}");
    println!("cargo:rustc-env=CAIRN_BUILD_BRANCH={branch}");
    println!("cargo:rustc-env=CAIRN_BUILD_DATE={date}");
    println!("cargo:rustc-env=CAIRN_BUILD_USER={user}@{host}");
    println!("cargo:rustc-env=CAIRN_BUILD_RUSTC={rustc}");
    // A new commit or branch changes the identity; nothing else needs a rerun.
    for path in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
