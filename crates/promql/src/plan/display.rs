//! A plan as text: one line per node, children indented under their
//! parent, each with what was decided for it.

use std::fmt::{self, Display, Formatter};

use super::{AggStrategy, MatcherSet, Node, Plan, Selector};

impl Display for Plan {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = self.ctx;
        if c.step == 0 {
            writeln!(f, "instant query at {}", c.start)?;
        } else {
            writeln!(
                f,
                "range query {}..{} every {} ms ({} steps)",
                c.start,
                c.end,
                c.step,
                c.n()
            )?;
        }
        match &self.split {
            Some(split) => writeln!(
                f,
                "split by steps into {} parts, {} thread(s) each",
                split.parts.len(),
                split.threads_per_part
            )?,
            None => writeln!(f, "not split by steps")?,
        }
        writeln!(
            f,
            "{}",
            if self.inline {
                "inline (on the caller's thread)"
            } else {
                "on the query pool"
            }
        )?;
        node(f, &self.root, 0)
    }
}

fn node(f: &mut Formatter<'_>, n: &Node, depth: usize) -> fmt::Result {
    let pad = "  ".repeat(depth);
    match n {
        Node::Number(v) => writeln!(f, "{pad}{v}"),
        Node::Str(s) => writeln!(f, "{pad}{s:?}"),
        Node::Neg(inner) => {
            writeln!(f, "{pad}-")?;
            node(f, inner, depth + 1)
        }
        Node::Vector(sel) => selector(f, &pad, sel, ""),
        Node::Matrix(sel, range) => selector(f, &pad, sel, &format!(", range {}", duration(*range))),
        Node::Subquery(sq) => {
            let step = sq.step.map_or(String::new(), duration);
            let offset = if sq.offset != 0 {
                format!(" offset {}", duration(sq.offset))
            } else {
                String::new()
            };
            let at = if sq.at.is_some() { " @ (pinned)" } else { "" };
            writeln!(
                f,
                "{pad}subquery [{}:{step}]{offset}{at}, reduced on {} thread(s)",
                duration(sq.range),
                sq.threads
            )?;
            node(f, &sq.inner, depth + 1)
        }
        Node::Call(call) => {
            writeln!(f, "{pad}{}()", call.name)?;
            call.args.iter().try_for_each(|a| node(f, a, depth + 1))
        }
        Node::Aggregate(a) => {
            let grouping = match (a.grouping.without, a.grouping.names.is_empty()) {
                (false, true) => String::new(),
                (without, _) => format!(
                    " {} ({})",
                    if without { "without" } else { "by" },
                    a.grouping.names.join(", ")
                ),
            };
            let how = match a.strategy {
                AggStrategy::Folded => "folded into its select".to_string(),
                AggStrategy::NodeByNode { threads } => format!("node by node, steps on {threads} thread(s)"),
            };
            writeln!(f, "{pad}{}{grouping}: {how}", a.op.name())?;
            if let Some(p) = &a.param {
                node(f, p, depth + 1)?;
            }
            node(f, &a.input, depth + 1)
        }
        Node::Info(info) => {
            writeln!(f, "{pad}info()")?;
            node(f, &info.input, depth + 1)?;
            selector(f, &"  ".repeat(depth + 1), &info.select, "")
        }
        Node::Binary(b) => {
            let bool_ = if b.return_bool { " bool" } else { "" };
            writeln!(f, "{pad}{}{bool_}", b.op.name())?;
            node(f, &b.lhs, depth + 1)?;
            node(f, &b.rhs, depth + 1)
        }
    }
}

fn selector(f: &mut Formatter<'_>, pad: &str, sel: &Selector, range: &str) -> fmt::Result {
    let sets: Vec<String> = sel.sets.iter().map(set).collect();
    writeln!(f, "{pad}{}{range}: {}", sel.text, sets.join("; "))
}

fn set(s: &MatcherSet) -> String {
    let bound = if s.bound == usize::MAX {
        "series unknown".to_string()
    } else {
        format!("at most {} series", s.bound)
    };
    format!("{bound}, {} shard(s)", s.shards)
}

/// `ms` in the largest unit that divides it: `90s`, `5m`, `1500ms`.
fn duration(ms: i64) -> String {
    for (unit, len) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms != 0 && ms % len == 0 {
            return format!("{}{unit}", ms / len);
        }
    }
    format!("{ms}ms")
}
