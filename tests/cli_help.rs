//! `cairn --help` names every subcommand `main` dispatches on, and each of
//! them is dispatched (answers its own help rather than the server's flags).
//! The list comes from the binary's own table, so it cannot drift.

use std::process::Command;

#[path = "../src/subcommand.rs"]
#[allow(dead_code)]
mod subcommand;

use subcommand::Subcommand;

fn cairn(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(args)
        .output()
        .expect("run cairn");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A flag only the server has.
const SERVER_FLAG: &str = "--storage.wal-fsync-interval";

#[test]
fn cli_help_lists_every_subcommand_with_one_line() {
    let (ok, help) = cairn(&["--help"]);
    assert!(ok, "{help}");
    assert!(help.contains(SERVER_FLAG), "the server's flags stay:\n{help}");
    for s in Subcommand::ALL {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{} ", s.name())))
            .unwrap_or_else(|| panic!("no line for {}:\n{help}", s.name()));
        assert!(line.contains(s.summary()), "{line}");
    }
    let (_, short) = cairn(&["-h"]);
    for s in Subcommand::ALL {
        assert!(short.contains(s.summary()), "-h lacks {}:\n{short}", s.name());
    }
}

#[test]
fn cli_each_listed_subcommand_is_dispatched() {
    for s in Subcommand::ALL {
        let (ok, text) = cairn(&[s.name(), "--help"]);
        assert!(ok, "cairn {} --help failed:\n{text}", s.name());
        assert!(
            !text.contains(SERVER_FLAG),
            "{} fell through to the server:\n{text}",
            s.name()
        );
        assert!(!text.trim().is_empty(), "{} said nothing", s.name());
    }
}
