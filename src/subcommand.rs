//! The subcommands `cairn` dispatches on its first argument, before the
//! server's flags are parsed. This table is the one list of them: `main`
//! dispatches through it and `cairn --help` prints it, so the two agree.

/// A subcommand of `cairn`; without one, `cairn` runs the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subcommand {
    Bench,
    Backup,
    Restore,
    Check,
    Test,
}

impl Subcommand {
    pub const ALL: [Subcommand; 5] = [Self::Bench, Self::Backup, Self::Restore, Self::Check, Self::Test];

    pub fn name(self) -> &'static str {
        match self {
            Self::Bench => "bench",
            Self::Backup => "backup",
            Self::Restore => "restore",
            Self::Check => "check",
            Self::Test => "test",
        }
    }

    /// One line for `cairn --help`.
    pub fn summary(self) -> &'static str {
        match self {
            Self::Bench => "Benchmark any Prometheus-compatible database (remote write + alerting-rule queries)",
            Self::Backup => "Back up a data directory to a directory or bucket, or list backups",
            Self::Restore => "Restore a backup into a data directory",
            Self::Check => {
                "Check configuration or rule files (as promtool does), or verify (and repair) a data directory"
            }
            Self::Test => "Run rule unit tests (`cairn test rules FILE...`, as promtool does)",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The section `cairn --help` ends with.
pub fn help_section() -> String {
    let width = Subcommand::ALL.iter().map(|s| s.name().len()).max().unwrap_or(0);
    let mut out = String::from("Commands (each takes --help; without one, cairn runs the server):\n");
    for s in Subcommand::ALL {
        out.push_str(&format!("  {:<width$}  {}\n", s.name(), s.summary()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcommand_names_round_trip_and_are_listed() {
        let help = help_section();
        for s in Subcommand::ALL {
            assert_eq!(Subcommand::from_name(s.name()), Some(s));
            assert!(help.lines().any(|l| l.trim_start().starts_with(s.name())), "{help}");
        }
        assert_eq!(Subcommand::from_name("--help"), None);
    }
}
