//! crates/support/src/zstd.rs on any bytes, with and without its entropy stage: the frame it
//! writes decodes (with ruzstd, an independent decoder) to exactly the input, carries the
//! input's checksum, and never grows the input by more than its framing.
//! The first byte repeats the rest that many times, so inputs span several 128 KiB blocks.
#![no_main]
use std::io::Read;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let input = rest.repeat(if rest.is_empty() {
        0
    } else {
        1 + usize::from(n) * 2000 / rest.len().max(1)
    });
    // With the entropy stage (the full module) and without it (lite).
    let frames = [
        tinker_support::zstd::compress_with::<true>(&input),
        tinker_support::zstd::compress_with::<false>(&input),
    ];
    for z in frames {
        check(&input, &z);
    }
});

fn check(input: &[u8], z: &[u8]) {
    let blocks = input.len().div_ceil(128 * 1024).max(1);
    // 14 bytes of frame header, 3 per block header, 4 of content checksum.
    assert!(
        z.len() <= input.len() + 18 + 3 * blocks,
        "{} -> {}",
        input.len(),
        z.len()
    );
    let mut d = ruzstd::decoding::StreamingDecoder::new(z).expect("a zstd frame");
    let mut out = Vec::new();
    d.read_to_end(&mut out).expect("decodes");
    assert!(out == input, "round trip of {} bytes", input.len());
    let frame = d.into_frame_decoder();
    assert_eq!(
        frame.get_checksum_from_data(),
        frame.get_calculated_checksum(),
        "content checksum"
    );
}
