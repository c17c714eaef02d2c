//! libFuzzer entry for `cairn_fuzz_targets::scrape_http_response`, where the target's checks live.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cairn_fuzz_targets::scrape_http_response(data));
