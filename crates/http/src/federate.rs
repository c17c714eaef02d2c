//! `GET|POST /federate`: for another Prometheus to scrape (hierarchical
//! federation, migration). Every series matching a `match[]` selector with
//! its newest sample in the lookback window before now, in the text
//! exposition format, as Prometheus' federation endpoint writes it: series
//! sorted by metric name, one `# TYPE <name> untyped` per run of a name,
//! each sample with its own timestamp, staleness markers left out, and an
//! empty `instance` label on series without one (so that a scraper's
//! `honor_labels: true` keeps them without an instance rather than giving
//! them its target's).

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use cairn_model::{Labels, METRIC_NAME, is_stale_nan};
use cairn_storage::{SelectHints, StorageError};

use crate::merged_series::MergedSeries;
use crate::{ApiError, AppState, Params, Tenant, exposition, now_ms, parse_match_params};

/// The label federation always writes, empty when a series has none.
const INSTANCE: &str = "instance";

pub async fn federate(
    State(state): State<AppState>,
    Tenant(scope): Tenant,
    params: Params,
) -> Result<Response, ApiError> {
    let sets = parse_match_params(&params.get_all("match[]"))?;
    let storage = state.reader(&scope)?;
    let end = now_ms();
    let start = end.saturating_sub(state.config().lookback_delta_ms);
    let slot = state.query_gate().admit().await?;
    let body = slot
        .run(move || {
            let hints = SelectHints {
                newest_only: true,
                ..SelectHints::default()
            };
            let mut newest = Vec::new();
            for series in MergedSeries::select(&*storage, start, end, &hints, &sets)? {
                let mut series = series?;
                if let Some((t, v)) = last_sample(&mut *series.samples)?
                    && !is_stale_nan(v)
                {
                    newest.push((series.labels, t, v));
                }
            }
            // Stable: series of one name stay in label order.
            newest.sort_by(|a, b| a.0.get(METRIC_NAME).cmp(&b.0.get(METRIC_NAME)));
            Ok(write_text(&newest))
        })
        .await?;
    Ok(([(header::CONTENT_TYPE, exposition::CONTENT_TYPE)], body).into_response())
}

fn last_sample(samples: &mut dyn cairn_storage::SampleBlocks) -> Result<Option<(i64, f64)>, StorageError> {
    let mut last = None;
    while let Some(block) = samples.next_block()? {
        if let (Some(&t), Some(&v)) = (block.ts.last(), block.vs.last()) {
            last = Some((t, v));
        }
    }
    Ok(last)
}

/// The exposition text of `(labels, time, value)` sorted by metric name.
fn write_text(samples: &[(Labels, i64, f64)]) -> String {
    let mut out = String::new();
    let mut last_name = None;
    for (labels, t, v) in samples {
        let name = labels.get(METRIC_NAME).unwrap_or_default();
        if name.is_empty() {
            // Prometheus too leaves a nameless series out.
            continue;
        }
        if last_name != Some(name) {
            out.push_str("# TYPE ");
            out.push_str(name);
            out.push_str(" untyped\n");
            last_name = Some(name);
        }
        out.push_str(name);
        let kept = labels
            .iter()
            .filter(|l| l.name != METRIC_NAME && !l.value.is_empty())
            .map(|l| (l.name.as_str(), l.value.as_str()));
        // Prometheus gives a series without an instance an empty one.
        let instance = labels.get(INSTANCE).is_none_or(str::is_empty).then_some((INSTANCE, ""));
        exposition::push_labels(&mut out, kept.chain(instance));
        out.push(' ');
        cairn_model::go_float::push_exposition(&mut out, *v);
        out.push(' ');
        out.push_str(itoa::Buffer::new().format(*t));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use cairn_model::stale_nan;

    use crate::test_util::*;

    fn app(now: i64) -> TestApp {
        let app = TestApp::new();
        app.write(&[
            ("up", "b", &[(now - 60_000, 0.0), (now - 15_000, 1.0)]),
            ("up", "a", &[(now - 30_000, 1.0)]),
            // Only older than the 5 minute lookback.
            ("up", "old", &[(now - 600_000, 1.0)]),
            // Its newest sample is a staleness marker: gone.
            ("up", "gone", &[(now - 30_000, 1.0), (now - 20_000, stale_nan())]),
            ("Big", "x", &[(now - 1000, 1_234_567.0), (now - 500, 2.5e-7)]),
            ("quote", "q\"\\\n", &[(now - 1000, f64::NAN)]),
        ]);
        app
    }

    #[tokio::test]
    async fn federation_writes_the_newest_samples_by_metric_name() {
        let now = crate::now_ms();
        let app = app(now);
        let resp = app.get("/federate?match[]=up&match[]={job=~\"x|q.*\"}").await;
        resp.check_status(200);
        assert_eq!(resp.content_type(), "text/plain; version=0.0.4; charset=utf-8");
        let want = format!(
            "# TYPE Big untyped\n\
             Big{{job=\"x\",instance=\"\"}} 2.5e-07 {}\n\
             # TYPE quote untyped\n\
             quote{{job=\"q\\\"\\\\\\n\",instance=\"\"}} NaN {}\n\
             # TYPE up untyped\n\
             up{{job=\"a\",instance=\"\"}} 1 {}\n\
             up{{job=\"b\",instance=\"\"}} 1 {}\n",
            now - 500,
            now - 1000,
            now - 30_000,
            now - 15_000,
        );
        assert_eq!(resp.body, want);
        // Overlapping selectors give each series once; no selector gives nothing.
        let both = app.get("/federate?match[]=up&match[]={job=\"a\"}").await.body;
        assert_eq!(both.matches("job=\"a\"").count(), 1);
        app.get("/federate").await.check(200, "");
        app.get("/federate?match[]=up{").await.check_status(400);
    }

    #[tokio::test]
    async fn a_series_with_an_instance_keeps_it() {
        let now = crate::now_ms();
        let app = TestApp::new();
        app.write_labels(
            &[("__name__", "m"), ("instance", "h:9100"), ("job", "node")],
            &[(now - 1000, 3.0)],
        );
        app.get("/federate?match[]=m").await.check(
            200,
            &format!(
                "# TYPE m untyped\nm{{instance=\"h:9100\",job=\"node\"}} 3 {}\n",
                now - 1000
            ),
        );
    }
}
