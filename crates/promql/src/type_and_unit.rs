//! Tests of how results treat `__type__` and `__unit__` (Prometheus'
//! type-and-unit labels): they go wherever `__name__` goes, and with the
//! engine option `rate`/`increase` judge counters by `__type__`.

use cairn_model::{Labels, Sample};
use cairn_storage::{Appendable, MemStorage};

use crate::{Engine, EngineOptions, Value};

fn storage(series: &[&[(&str, &str)]]) -> MemStorage {
    let s = MemStorage::new();
    let mut app = s.appender();
    for labels in series {
        let samples: Vec<Sample> = (0..=10).map(|i| Sample::new(i * 60_000, i as f64)).collect();
        app.append(&Labels::from_pairs(labels.iter().copied()), &samples)
            .unwrap();
    }
    app.commit().unwrap();
    s
}

fn engine(delayed: bool, by_type: bool) -> Engine {
    Engine::new(EngineOptions {
        delayed_name_removal: delayed,
        type_and_unit_labels: by_type,
        ..EngineOptions::default()
    })
}

fn labels_of(v: &Value) -> Vec<Labels> {
    match v {
        Value::Vector(v) => v.iter().map(|s| s.metric.clone()).collect(),
        other => panic!("not a vector: {other:?}"),
    }
}

const GAUGE: &[(&str, &str)] = &[
    ("__name__", "m"),
    ("__type__", "gauge"),
    ("__unit__", "s"),
    ("job", "a"),
];
const COUNTER: &[(&str, &str)] = &[("__name__", "m"), ("__type__", "counter"), ("job", "b")];

#[test]
fn type_and_unit_go_with_the_name() {
    let s = storage(&[GAUGE]);
    for delayed in [false, true] {
        let e = engine(delayed, false);
        for q in ["-m", "m * 2", "abs(m)", "m == bool 1", "rate(m[5m])"] {
            let r = e.instant(&s, q, 600_000).unwrap();
            assert_eq!(labels_of(&r.value), [Labels::from_pairs([("job", "a")])], "{q}");
        }
        // Kept where the name is kept.
        let r = e.instant(&s, "m > 1", 600_000).unwrap();
        assert_eq!(labels_of(&r.value), [Labels::from_pairs(GAUGE.iter().copied())]);
        // Grouping without labels keeps them; only the name goes.
        let r = e.instant(&s, "sum without (job) (m)", 600_000).unwrap();
        assert_eq!(
            labels_of(&r.value),
            [Labels::from_pairs([("__type__", "gauge"), ("__unit__", "s")])]
        );
    }
}

#[test]
fn series_equal_but_for_their_type_collide_once_it_goes() {
    let s = storage(&[GAUGE, &[("__name__", "m"), ("__type__", "counter"), ("job", "a")]]);
    for delayed in [false, true] {
        let err = engine(delayed, false).instant(&s, "abs(m)", 600_000).unwrap_err();
        assert_eq!(err.to_string(), "vector cannot contain metrics with the same labelset");
    }
    // They are distinct series while they keep it.
    let r = engine(false, false).instant(&s, "m > 1", 600_000).unwrap();
    assert_eq!(labels_of(&r.value).len(), 2);
}

#[test]
fn rate_judges_counters_by_type_only_with_the_option() {
    let s = storage(&[GAUGE, COUNTER]);
    let by_name = engine(true, false).instant(&s, "sum(rate(m[5m]))", 600_000).unwrap();
    assert_eq!(
        by_name.infos,
        ["PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: \"m\" (1:10)"]
    );
    for q in ["rate(m[5m])", "sum(rate(m[5m]))"] {
        let by_type = engine(true, true).instant(&s, q, 600_000).unwrap();
        assert_eq!(by_type.infos.len(), 1, "{q}: {:?}", by_type.infos);
        assert!(
            by_type.infos[0].starts_with(
                "PromQL info: metric might not be a counter, __type__ label is not set to \"counter\" or \"histogram\", got \"gauge\": \"m\""
            ),
            "{q}: {:?}",
            by_type.infos
        );
    }
}
