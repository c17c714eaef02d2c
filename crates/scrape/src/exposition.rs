//! Reading a scrape body with cairn-protocols' exposition parsers, in the
//! format its `Content-Type` (or the fallback protocol) names.

use cairn_protocols::exposition::{Exposition, ParseOptions, ScrapeFormat, parse_encoded, parse_with_known};

use cairn_model::{Labels, WireLabelsBuf};
use parking_lot::Mutex;

use crate::append_lean::merging_writer;
use crate::cache::ScrapeCache;
use crate::settings::JobSettings;
use crate::target::{ALWAYS_CLASSIC_LABEL, CONVERT_NHCB_LABEL, NATIVE_HISTOGRAMS_LABEL, Target, parse_go_bool};

/// How a target's bodies are read: the job's histogram switches, which the
/// target's `__scrape_native_histograms__` etc. labels override.
pub(crate) fn parse_options(target: &Target, job: &JobSettings) -> ParseOptions {
    let flag = |name: &str, default: bool| parse_go_bool(target.get(name)).unwrap_or(default);
    ParseOptions {
        keep_classic_histograms: flag(ALWAYS_CLASSIC_LABEL, job.always_scrape_classic_histograms),
        convert_classic_histograms_to_nhcb: flag(CONVERT_NHCB_LABEL, job.convert_classic_histograms_to_nhcb),
        native_histograms: flag(NATIVE_HISTOGRAMS_LABEL, job.scrape_native_histograms),
        skip_openmetrics_created_series: false,
    }
}

/// Merged-label buffers of finished scrapes, for the next ones: as many as
/// were ever parsed at once, so that a scrape allocates none.
static MERGED_BUFFERS: Mutex<Vec<WireLabelsBuf>> = Mutex::new(Vec::new());

/// The most room a buffer in [`MERGED_BUFFERS`] keeps.
const KEPT_MERGED_BYTES: usize = 1 << 20;

/// A body and what was read from it: text samples name their series by
/// spans of the body.
pub(crate) struct ParsedBody<'a> {
    pub body: &'a [u8],
    pub exposition: Exposition,
    /// The series a lean cache's reader wrote, merged with the target's
    /// labels, at their samples' [`cairn_protocols::exposition::EncodedAt`].
    pub merged: WireLabelsBuf,
}

/// Parses a whole body; any malformed entry fails the scrape, as in
/// Prometheus. The labels of series `cache` knows are not read; a lean
/// cache's are encoded, not built, merged with the `target`'s where they
/// can be.
pub(crate) fn parse_body<'a>(
    body: &'a [u8],
    content_type: &str,
    job: &JobSettings,
    options: &ParseOptions,
    cache: &ScrapeCache,
    target: &Labels,
) -> Result<ParsedBody<'a>, String> {
    let (format, warning) = ScrapeFormat::for_response(content_type, job.fallback_protocol)?;
    if let Some(w) = warning {
        tracing::debug!(job = %job.job_name, "{w}");
    }
    let mut merged = WireLabelsBuf::default();
    let exposition = if cache.is_lean() {
        merged = MERGED_BUFFERS.lock().pop().unwrap_or_default();
        match merging_writer(target, job, &mut merged) {
            Some(mut write) => parse_encoded(format, body, options, Some(&mut write)),
            None => parse_encoded(format, body, options, None),
        }
    } else {
        parse_with_known(format, body, options, &mut |key| cache.knows(key))
    }
    .map_err(|e| e.to_string())?;
    Ok(ParsedBody {
        body,
        exposition,
        merged,
    })
}

impl Drop for ParsedBody<'_> {
    fn drop(&mut self) {
        let mut merged = std::mem::take(&mut self.merged);
        if merged.capacity_bytes() > 0 && merged.capacity_bytes() <= KEPT_MERGED_BYTES {
            merged.clear();
            MERGED_BUFFERS.lock().push(merged);
        }
    }
}
