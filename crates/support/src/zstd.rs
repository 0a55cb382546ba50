//! A small zstd compressor for `forward_backward` bodies (`Content-Encoding: zstd` when
//! the server sets `proto_compress_fwdbwd`).
//!
//! It writes standard zstd frames (RFC 8878) that any decoder reads: 128 KiB blocks,
//! each compressed with a greedy LZ77 matcher (a 4-byte hash table, and the last offset
//! tried first, which catches the fixed strides of int64 and float32 arrays), then
//! entropy-coded (`zstd/entropy.rs`): literals with a Huffman code of their own in four
//! streams, and each sequence field with the predefined FSE table, one symbol, or a table
//! built from the block's counts, whichever is smallest. A block that would not shrink is
//! stored raw. On forward_backward bodies this writes output within a few percent of
//! libzstd level 3's (issue 21), in one fast matching pass.
//!
//! Each frame ends with the content checksum the format defines (the low 32 bits of
//! XXH64 of the content, seed 0), so a decoder detects a body corrupted on the way.
//!
//! `compress(&[0, 1, 2, 3].repeat(1000))` is a frame of about 30 bytes that starts with
//! the zstd magic `28 B5 2F FD`; the tests decode every frame with two independent
//! decoders (ruzstd, and libzstd through Python's `zstandard` in the conformance venv).

mod entropy;

use entropy::{write_literals, BitWriter, Fse};

const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
const BLOCK: usize = 128 * 1024;
/// Window: matches reach at most this far back (Window_Descriptor exponent 13: 8 MiB).
const WINDOW_LOG: u32 = 23;
const MIN_MATCH: usize = 4;
const HASH_LOG: u32 = 16;

/// Compresses `input` into one zstd frame (with its content size and checksum).
///
/// The entropy stage (Huffman literals, the blocks' own FSE tables) is the feature
/// `zstd-entropy`, on in the full module. The lite module leaves it out for its size
/// budget (issue 20: about 3 KB gzip) and codes literals raw and sequences with the
/// predefined tables: bodies about 1.5× larger, which a Worker's datacenter uplink
/// carries more cheaply than a browser's.
pub fn compress(input: &[u8]) -> Vec<u8> {
    compress_with::<{ cfg!(feature = "zstd-entropy") }>(input)
}

/// [`compress`], with or without the entropy stage (both are tested in every build).
pub fn compress_with<const ENTROPY: bool>(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() / 2 + 64);
    out.extend_from_slice(&MAGIC);
    // Frame_Header_Descriptor: Frame_Content_Size on 8 bytes (flag 3), no single-segment
    // flag (a Window_Descriptor follows), Content_Checksum_flag (bit 2), no dictionary.
    out.push(3 << 6 | 1 << 2);
    out.push(((WINDOW_LOG - 10) << 3) as u8);
    out.extend_from_slice(&(input.len() as u64).to_le_bytes());
    if input.is_empty() {
        block_header(&mut out, true, 0, 0);
    } else {
        write_blocks::<ENTROPY>(input, &mut out);
    }
    // Content_Checksum: XXH64 of the content, seed 0, its low 4 bytes little-endian.
    let checksum = xxhash_rust::xxh64::xxh64(input, 0) as u32;
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// Appends the blocks of a non-empty `input`: each compressed, or stored raw when that
/// is not smaller.
fn write_blocks<const ENTROPY: bool>(input: &[u8], out: &mut Vec<u8>) {
    let mut m = Matcher {
        table: vec![0u32; 1 << HASH_LOG],
        rep: [1, 4, 8],
    };
    let mut start = 0;
    while start < input.len() {
        let end = (start + BLOCK).min(input.len());
        let last = end == input.len();
        let header_at = out.len();
        out.extend_from_slice(&[0, 0, 0]);
        let saved_rep = m.rep;
        let body_at = out.len();
        m.block::<ENTROPY>(input, start, end, out);
        let size = out.len() - body_at;
        if size >= end - start {
            // Stored instead: nothing of this block's sequences reaches the decoder, so
            // neither does their effect on the repeat offsets.
            m.rep = saved_rep;
            out.truncate(body_at);
            out.extend_from_slice(&input[start..end]);
            write_block_header(&mut out[header_at..], last, 0, end - start);
        } else {
            write_block_header(&mut out[header_at..], last, 2, size);
        }
        start = end;
    }
}

fn block_header(out: &mut Vec<u8>, last: bool, kind: u32, size: usize) {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0]);
    write_block_header(&mut out[at..], last, kind, size);
}

fn write_block_header(at: &mut [u8], last: bool, kind: u32, size: usize) {
    let h = u32::from(last) | (kind << 1) | ((size as u32) << 3);
    at[..3].copy_from_slice(&h.to_le_bytes()[..3]);
}

struct Seq {
    lit_len: u32,
    match_len: u32,
    /// Offset_Value: 1 = the last offset, or offset + 3.
    off_value: u32,
}

struct Matcher {
    /// Last position (+1; 0 = none) of each 4-byte hash.
    table: Vec<u32>,
    rep: [u32; 3],
}

#[inline]
fn read4(s: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([s[i], s[i + 1], s[i + 2], s[i + 3]])
}

#[inline]
fn hash(v: u32) -> usize {
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_LOG)) as usize
}

impl Matcher {
    /// Appends one compressed block (literals section, sequences section) for
    /// `input[start..end]`; matches may reach back before `start` within the window.
    fn block<const ENTROPY: bool>(
        &mut self,
        input: &[u8],
        start: usize,
        end: usize,
        out: &mut Vec<u8>,
    ) {
        let mut seqs: Vec<Seq> = Vec::new();
        let mut literals: Vec<u8> = Vec::new();
        let mut anchor = start;
        let mut i = start;
        let mut misses = 0usize;
        let window = 1usize << WINDOW_LOG;
        while i + MIN_MATCH <= end {
            let cur = read4(input, i);
            let h = hash(cur);
            let cand = self.table[h] as usize;
            self.table[h] = (i + 1) as u32;
            let rep0 = self.rep[0] as usize;
            // The last offset first (cheapest to code), then the hash candidate.
            let (offset, use_rep) = if i - anchor > 0 && rep0 <= i && read4(input, i - rep0) == cur
            {
                (rep0, true)
            } else if cand > 0 && i - (cand - 1) <= window && read4(input, cand - 1) == cur {
                (i - (cand - 1), false)
            } else {
                misses += 1;
                i += 1 + (misses >> 5);
                continue;
            };
            misses = 0;
            let mut len = MIN_MATCH;
            len += common_prefix(&input[i + len..end], &input[i + len - offset..]);
            literals.extend_from_slice(&input[anchor..i]);
            let lit_len = (i - anchor) as u32;
            let off_value = if use_rep {
                1
            } else {
                self.rep = [offset as u32, self.rep[0], self.rep[1]];
                offset as u32 + 3
            };
            seqs.push(Seq {
                lit_len,
                match_len: len as u32,
                off_value,
            });
            // Index a position inside the match so the next one can find it.
            if i + len >= 2 && i + len - 2 > i && i + len + 2 <= end {
                let p = i + len - 2;
                self.table[hash(read4(input, p))] = (p + 1) as u32;
            }
            i += len;
            anchor = i;
        }
        literals.extend_from_slice(&input[anchor..end]);
        write_literals::<ENTROPY>(out, &literals);
        write_sequences::<ENTROPY>(out, &seqs);
    }
}

// Literal-length and match-length codes: baselines and extra bits (RFC 8878 3.1.1.3.2.1.1).
const LL_BASE: [u32; 36] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 28, 32, 40, 48, 64,
    128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
];
const LL_BITS: [u8; 36] = [
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11,
    12, 13, 14, 15, 16,
];
/// Match-length baselines minus 3 (the minimum match).
const ML_BASE: [u32; 53] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31, 32, 34, 36, 38, 40, 44, 48, 56, 64, 80, 96, 128, 256, 512, 1024, 2048,
    4096, 8192, 16384, 32768, 65536,
];
const ML_BITS: [u8; 53] = [
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
];

/// How many leading bytes `a` and `b` share (at most `a.len()`), eight at a time.
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut k = 0;
    while k + 8 <= n {
        let x = u64::from_le_bytes(a[k..k + 8].try_into().unwrap())
            ^ u64::from_le_bytes(b[k..k + 8].try_into().unwrap());
        if x != 0 {
            return k + (x.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    while k < n && a[k] == b[k] {
        k += 1;
    }
    k
}

/// The code whose range holds `v` (the last baseline not above it).
const fn code_of(base: &[u32], v: u32) -> usize {
    let mut c = 0;
    while c + 1 < base.len() && base[c + 1] <= v {
        c += 1;
    }
    c
}

/// [`code_of`] for the small values, where most lengths fall, as tables.
const fn small_codes<const N: usize>(base: &[u32]) -> [u8; N] {
    let mut t = [0u8; N];
    let mut v = 0;
    while v < N {
        t[v] = code_of(base, v as u32) as u8;
        v += 1;
    }
    t
}
const LL_SMALL: [u8; 64] = small_codes(&LL_BASE);
const ML_SMALL: [u8; 128] = small_codes(&ML_BASE);

/// The literal-length code of `v`: from the table, else from its highest bit (the
/// baselines above 63 are powers of two, from code 25 = 64 on).
#[inline]
fn ll_code(v: u32) -> usize {
    match LL_SMALL.get(v as usize) {
        Some(&c) => c as usize,
        None => (31 - v.leading_zeros()) as usize + 19,
    }
}

/// The match-length code of `v` = length − 3 (baselines above 127 are powers of two,
/// from code 43 = 128 on).
#[inline]
fn ml_code(v: u32) -> usize {
    match ML_SMALL.get(v as usize) {
        Some(&c) => c as usize,
        None => (31 - v.leading_zeros()) as usize + 36,
    }
}

// The predefined distributions (RFC 8878 3.1.1.3.2.2), -1 = "less than 1".
const LL_DIST: [i16; 36] = [
    4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
    -1, -1, -1, -1,
];
const ML_DIST: [i16; 53] = [
    1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
];
const OF_DIST: [i16; 29] = [
    1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
];

/// The sequences section: for each of the literal-length, offset and match-length codes,
/// the predefined table, or with `ENTROPY` whichever of it, one symbol (RLE) and a table
/// made from this block's counts costs fewer bits, table description included.
fn write_sequences<const ENTROPY: bool>(out: &mut Vec<u8>, seqs: &[Seq]) {
    let n = seqs.len();
    if n < 128 {
        out.push(n as u8);
    } else if n < 0x7F00 {
        out.extend_from_slice(&[((n >> 8) + 0x80) as u8, n as u8]);
    } else {
        out.push(0xFF);
        out.extend_from_slice(&((n - 0x7F00) as u16).to_le_bytes());
    }
    if n == 0 {
        return;
    }
    let mut codes = Vec::with_capacity(n);
    for s in seqs {
        let ofc = 31 - s.off_value.leading_zeros();
        codes.push([
            ll_code(s.lit_len) as u8,
            ofc as u8,
            ml_code(s.match_len - 3) as u8,
        ]);
    }
    let modes_at = out.len();
    out.push(0);
    // Table descriptions in the order literal lengths, offsets, match lengths.
    let mut modes = 0u8;
    let mut table = |k: usize, dist: &[i16], log: u32, max_log: u32, out: &mut Vec<u8>| {
        let (mode, fse) = if ENTROPY {
            choose_table(&codes, k, dist, log, max_log, out)
        } else {
            (0, Fse::new(dist, log))
        };
        modes |= mode << (6 - 2 * k);
        fse
    };
    let ll = table(0, &LL_DIST, 6, 9, out);
    let of = table(1, &OF_DIST, 5, 8, out);
    let ml = table(2, &ML_DIST, 6, 9, out);
    out[modes_at] = modes;
    let mut w = BitWriter::new(out);
    let extras = |w: &mut BitWriter, s: &Seq, c: &[u8; 3]| {
        let (llc, ofc, mlc) = (c[0] as usize, c[1] as u32, c[2] as usize);
        w.add(u64::from(s.lit_len - LL_BASE[llc]), u32::from(LL_BITS[llc]));
        w.add(
            u64::from(s.match_len - 3 - ML_BASE[mlc]),
            u32::from(ML_BITS[mlc]),
        );
        w.add(u64::from(s.off_value), ofc);
    };
    let c = &codes[n - 1];
    let (mut sml, mut sof, mut sll) = (
        ml.init(c[2] as usize),
        of.init(c[1] as usize),
        ll.init(c[0] as usize),
    );
    extras(&mut w, &seqs[n - 1], c);
    for (s, c) in seqs[..n - 1].iter().zip(&codes[..n - 1]).rev() {
        of.encode(&mut w, &mut sof, c[1] as usize);
        ml.encode(&mut w, &mut sml, c[2] as usize);
        ll.encode(&mut w, &mut sll, c[0] as usize);
        extras(&mut w, s, c);
    }
    ml.finish(&mut w, sml);
    of.finish(&mut w, sof);
    ll.finish(&mut w, sll);
    w.close();
}

/// The cheapest way to code field `k` of `codes`: its mode (0 predefined, 1 RLE, 2 a table
/// of its own, whose description is appended to `out`) and the table.
fn choose_table(
    codes: &[[u8; 3]],
    k: usize,
    predefined: &[i16],
    predefined_log: u32,
    max_log: u32,
    out: &mut Vec<u8>,
) -> (u8, Fse) {
    let mut counts = [0u32; 53];
    for c in codes {
        counts[c[k] as usize] += 1;
    }
    let max_symbol = (0..predefined.len())
        .rev()
        .find(|&s| counts[s] > 0)
        .unwrap_or(0);
    if counts[max_symbol] as usize == codes.len() {
        out.push(max_symbol as u8);
        return (1, Fse::rle());
    }
    let counts = &counts[..=max_symbol];
    let log = entropy::table_log(max_log, codes.len(), max_symbol);
    let norm = entropy::normalize(counts, log);
    let at = out.len();
    entropy::write_ncount(out, &norm, log);
    // Costs in 1/256 bits; the description's bytes count against the block's own table.
    let own =
        entropy::cost(counts, &norm, log).unwrap_or(u64::MAX) + 2048 * (out.len() - at) as u64;
    match entropy::cost(counts, predefined, predefined_log) {
        Some(bits) if bits <= own => {
            out.truncate(at);
            (0, Fse::new(predefined, predefined_log))
        }
        _ => (2, Fse::new(&norm, log)),
    }
}

#[cfg(test)]
mod tests {
    use super::compress_with;
    use std::io::Read;

    /// Both variants: with the entropy stage (the full module) and without (lite).
    fn compress_both(data: &[u8]) -> [Vec<u8>; 2] {
        [compress_with::<true>(data), compress_with::<false>(data)]
    }

    fn compress(data: &[u8]) -> Vec<u8> {
        compress_with::<true>(data)
    }

    /// Decodes a frame with ruzstd and checks its content checksum against the one
    /// ruzstd computes (with its own XXH64, the `twox-hash` crate).
    fn decompress(z: &[u8]) -> Vec<u8> {
        let mut d = ruzstd::decoding::StreamingDecoder::new(z).expect("a zstd frame");
        let mut out = Vec::new();
        d.read_to_end(&mut out).expect("decodes");
        let frame = d.into_frame_decoder();
        let carried = frame.get_checksum_from_data().expect("a content checksum");
        assert_eq!(Some(carried), frame.get_calculated_checksum(), "checksum");
        out
    }

    fn inputs() -> Vec<(&'static str, Vec<u8>)> {
        let mut next = crate::testing::xorshift(0x2545F4914F6CDD1Du64);
        let random: Vec<u8> = (0..300_000).map(|_| next() as u8).collect();
        // int64 token ids and float32 weights, as a forward_backward body holds them.
        let tokens: Vec<u8> = (0..200_000)
            .flat_map(|_| ((next() % 151_000) as i64).to_le_bytes())
            .collect();
        let weights: Vec<u8> = (0..100_000)
            .flat_map(|i| if i % 7 == 0 { 0f32 } else { 1f32 }.to_le_bytes())
            .collect();
        let text: Vec<u8> = "the quick brown fox jumps over the lazy dog; "
            .repeat(5_000)
            .into_bytes();
        // Literals-heavy inputs for the Huffman coder: bytes with about 2 bits of entropy
        // whose rare values need codes over 11 bits before limiting, 16 equally likely
        // values (4 bits) at the sizes where the literals header changes format, and two
        // values.
        let skewed: Vec<u8> = (0..400_000)
            .map(|_| next().trailing_zeros() as u8)
            .collect();
        let nibbles: Vec<u8> = (0..20_000).map(|_| (next() % 16) as u8 + b'a').collect();
        let two: Vec<u8> = (0..50_000).map(|_| b'x' + (next() % 2) as u8).collect();
        let mut all = vec![
            ("empty", vec![]),
            ("one byte", vec![7]),
            ("short", b"abcabcabcab".to_vec()),
            ("zeros", vec![0; 1_000_000]),
            ("random", random),
            ("tokens", tokens),
            ("weights", weights),
            ("text", text),
            ("block edge", vec![1; super::BLOCK]),
            (
                "block edge + 1",
                (0..super::BLOCK + 1).map(|i| (i % 251) as u8).collect(),
            ),
            ("skewed", skewed),
            ("two values", two),
        ];
        for n in [63, 64, 65, 1023, 1024, 1025, 16383, 16384, 16385, 20_000] {
            all.push(("nibbles", nibbles[..n].to_vec()));
        }
        all
    }

    #[test]
    fn every_frame_decodes_to_its_input() {
        for (name, data) in inputs() {
            for (z, variant) in compress_both(&data).iter().zip(["full", "lite"]) {
                assert_eq!(decompress(z), data, "{name} ({variant})");
            }
        }
    }

    /// The length-code shortcuts agree with the baselines on every length a block can hold.
    #[test]
    fn length_codes_match_their_baselines() {
        use super::{code_of, ll_code, ml_code, LL_BASE, ML_BASE};
        for v in 0..super::BLOCK as u32 {
            assert_eq!(ll_code(v), code_of(&LL_BASE, v), "literal length {v}");
            assert_eq!(ml_code(v), code_of(&ML_BASE, v), "match length {v} + 3");
        }
    }

    #[test]
    fn the_checksum_is_xxh64s_low_half() {
        // XXH64("", seed 0) = 0xEF46DB3751D8E999 (the xxHash specification's vector):
        // the empty frame ends with 0x51D8E999, little-endian.
        let z = compress(&[]);
        assert_eq!(z[4] & 0b100, 0b100, "Content_Checksum_flag");
        assert_eq!(&z[z.len() - 4..], &[0x99, 0xE9, 0xD8, 0x51]);
        // "abc" has XXH64 0x44BC2CF5AD770999.
        let z = compress(b"abc");
        assert_eq!(&z[z.len() - 4..], &[0x99, 0x09, 0x77, 0xAD]);
    }

    /// libzstd (through Python's `zstandard` in the conformance venv) decodes
    /// every frame, and rejects one whose checksum was altered: it verifies checksums.
    #[test]
    fn libzstd_decodes_every_frame_and_checks_its_checksum() {
        let python = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/conformance/.venv/bin/python"
        );
        let has_zstandard = std::process::Command::new(python)
            .args(["-c", "import zstandard"])
            .output()
            .is_ok_and(|o| o.status.success());
        // Not a skip: make test's setup installs the venv, and a test that passes
        // without its oracle would pass for nothing.
        assert!(
            has_zstandard,
            "libzstd is this test's oracle: run `make setup` (tests/conformance/.venv with zstandard)"
        );
        let dir = std::env::temp_dir().join(format!("tinker-zstd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut names = Vec::new();
        for (i, (_, data)) in inputs().into_iter().enumerate() {
            for (mut z, variant) in compress_both(&data).into_iter().zip(["full", "lite"]) {
                let name = format!("{i}-{variant}");
                std::fs::write(dir.join(format!("{name}.raw")), &data).unwrap();
                std::fs::write(dir.join(format!("{name}.zst")), &z).unwrap();
                let last = z.len() - 1;
                z[last] ^= 1;
                std::fs::write(dir.join(format!("{name}.bad")), &z).unwrap();
                names.push(name);
            }
        }
        // `decompressobj` decodes the whole frame (one-shot `decompress` skips an empty
        // frame's checksum).
        let script = r#"
import sys, zstandard
def decode(path):
    return zstandard.ZstdDecompressor().decompressobj().decompress(open(path, "rb").read())
d = sys.argv[1]
for n in sys.argv[2:]:
    assert decode(f"{d}/{n}.zst") == open(f"{d}/{n}.raw", "rb").read(), n
    try:
        decode(f"{d}/{n}.bad")
    except zstandard.ZstdError:
        continue
    raise AssertionError(f"{n}: a wrong checksum was accepted")
"#;
        let out = std::process::Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(&dir)
            .args(&names)
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn repetitive_data_shrinks_and_random_data_barely_grows() {
        for (name, data) in inputs() {
            let [z, lite] = compress_both(&data);
            let ratio = z.len() as f64 / data.len().max(1) as f64;
            // The entropy stage never makes a frame larger than the lite one by more than
            // the longer literals headers (2 bytes per block).
            assert!(
                z.len() <= lite.len() + 2 * data.len().div_ceil(super::BLOCK),
                "{name}"
            );
            match name {
                "zeros" | "text" | "weights" => assert!(ratio < 0.05, "{name}: {ratio}"),
                "tokens" => assert!(ratio < 0.75, "{name}: {ratio}"),
                // Only entropy-coded literals shrink these (they have few matches).
                "skewed" => assert!(ratio < 0.45, "{name}: {ratio}"),
                "two values" => assert!(ratio < 0.3, "{name}: {ratio}"),
                "nibbles" if data.len() >= 1024 => {
                    assert!(ratio < 0.6, "{name}: {ratio}");
                    // Without the entropy stage they hardly shrink.
                    assert!(lite.len() * 10 > data.len() * 9, "{name} (lite)");
                }
                // Stored blocks: 3 bytes per 128 KiB, plus the frame header.
                "random" => assert!(z.len() <= data.len() + 3 * 3 + 18, "{name}"),
                _ => {}
            }
        }
    }
}
