#![no_main]
// A panic, an abort or an allocation over libFuzzer's limits is a finding; an error is not.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tiermem_fuzz::targets::damo(data);
});
