//! `timestamp`: of a selector as written, each sample's own time (not the
//! step's); of anything else (`+x` too), the step's.

use super::arg;
use crate::eval::{Ev, Result};
use crate::plan::{Call, Node};
use crate::series::Val;
use crate::steps::Ctx;

pub(super) fn timestamp(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let mut v = match arg(call, 0)? {
        Node::Vector(sel) if call.of_selector => match ev.eval_vector_selector(sel, c, true)? {
            Val::Vector(v) => v,
            _ => Vec::new(),
        },
        e => {
            let mut v = ev.eval_vector(e, c)?;
            for s in &mut v {
                s.pts.iter_mut().for_each(|p| p.1 = p.0 as f64 / 1000.0);
            }
            v
        }
    };
    v.iter_mut().for_each(|s| s.drop_name = true);
    Ok(Val::Vector(v))
}

#[cfg(test)]
mod tests {
    use cairn_model::{Labels, Sample};
    use cairn_storage::{Appendable, MemStorage};

    #[test]
    fn a_selector_as_written_gives_its_samples_times_anything_else_the_steps() {
        let s = MemStorage::new();
        let mut app = s.appender();
        app.append(
            &Labels::from_pairs([("__name__", "x")]),
            &[Sample::new(0, 1.0), Sample::new(30_000, 2.0)],
        )
        .unwrap();
        app.commit().unwrap();
        let e = crate::Engine::new(crate::EngineOptions::default());
        for (q, want) in [
            ("timestamp(x)", 30.0),
            ("timestamp((x))", 30.0),
            ("timestamp(x @ 0)", 0.0),
            ("timestamp(+x)", 60.0),
            ("timestamp(-x)", 60.0),
            ("timestamp(+(x))", 60.0),
            ("timestamp(abs(x))", 60.0),
        ] {
            match e.instant(&s, q, 60_000).unwrap().value {
                crate::Value::Vector(v) => assert_eq!(v[0].value.as_float(), Some(want), "{q}"),
                other => panic!("{q}: {other:?}"),
            }
        }
    }
}
