//! libFuzzer entry for `cairn_fuzz_targets::kubernetes_events`, where the target's checks live.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cairn_fuzz_targets::kubernetes_events(data));
