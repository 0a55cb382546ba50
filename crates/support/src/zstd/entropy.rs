//! zstd's entropy coders, encoding side (RFC 8878 4): FSE tables, either predefined or
//! normalized from a block's own counts and sent with it, and Huffman-coded literals.
//! They follow libzstd's encoder (`FSE_buildCTable`, `FSE_writeNCount`, `HUF_compress4X`)
//! closely enough that its decoder and ruzstd read every stream they write.

/// Little-endian bit accumulator (zstd's bitstreams are read from their end).
pub struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    bits: u32,
}

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            bits: 0,
        }
    }

    /// Appends the low `n` bits of `v`, `n` ≤ 32.
    #[inline(never)]
    pub fn add(&mut self, v: u64, n: u32) {
        self.acc |= (v & ((1u64 << n) - 1)) << self.bits;
        self.bits += n;
        if self.bits >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.bits -= 32;
        }
    }

    /// The bits still held, padded with zeros to whole bytes.
    pub fn flush(self) {
        let n = self.bits.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..n]);
    }

    /// The end marker (a 1 bit), then [`BitWriter::flush`].
    pub fn close(mut self) {
        self.add(1, 1);
        self.flush();
    }
}

/// An FSE encoding table (zstd's `FSE_buildCTable`).
pub struct Fse {
    pub log: u32,
    state_table: Vec<u16>,
    /// Per symbol: (deltaNbBits, deltaFindState).
    symbols: Vec<(u32, i32)>,
}

impl Fse {
    /// The table of a distribution summing to `2^log`: counts, -1 for "less than 1", 0 for
    /// a symbol that never occurs.
    pub fn new(dist: &[i16], log: u32) -> Fse {
        let size = 1usize << log;
        // Fixed arrays: logs up to 9, alphabets up to 53 symbols.
        let mut symbol_at = [0u8; 512];
        let mut high = size - 1;
        let mut cumul = [0u32; 54];
        for (s, &c) in dist.iter().enumerate() {
            cumul[s + 1] = cumul[s]
                + if c == -1 {
                    symbol_at[high] = s as u8;
                    high = high.wrapping_sub(1);
                    1
                } else {
                    c as u32
                };
        }
        let step = (size >> 1) + (size >> 3) + 3;
        let mut pos = 0usize;
        for (s, &c) in dist.iter().enumerate() {
            for _ in 0..c.max(0) {
                symbol_at[pos] = s as u8;
                pos = (pos + step) & (size - 1);
                while pos > high {
                    pos = (pos + step) & (size - 1);
                }
            }
        }
        let mut state_table = vec![0u16; size];
        let mut next = cumul;
        for (u, &s) in symbol_at[..size].iter().enumerate() {
            state_table[next[s as usize] as usize] = (size + u) as u16;
            next[s as usize] += 1;
        }
        let mut total = 0i32;
        let mut symbols = Vec::with_capacity(dist.len());
        for &c in dist {
            symbols.push(match c {
                0 => (((log + 1) << 16) - (1 << log), 0),
                -1 | 1 => {
                    total += 1;
                    ((log << 16) - (1 << log), total - 2)
                }
                _ => {
                    let c = c as u32;
                    let max_bits_out = log - (31 - (c - 1).leading_zeros());
                    let min_state_plus = c << max_bits_out;
                    total += c as i32;
                    (
                        (max_bits_out << 16).wrapping_sub(min_state_plus),
                        total - 2 * c as i32,
                    )
                }
            });
        }
        Fse {
            log,
            state_table,
            symbols,
        }
    }

    /// The table of RLE mode: one symbol, no bits at all.
    pub fn rle() -> Fse {
        Fse {
            log: 0,
            state_table: vec![0],
            symbols: vec![(0, 0); 64],
        }
    }

    /// The first state, for the last symbol coded (`FSE_initCState2`).
    pub fn init(&self, symbol: usize) -> u32 {
        let (delta_bits, find) = self.symbols[symbol];
        let nb = (delta_bits + (1 << 15)) >> 16;
        let v = (nb << 16).wrapping_sub(delta_bits);
        u32::from(self.state_table[((v >> nb) as i32 + find) as usize])
    }

    #[inline(never)]
    pub fn encode(&self, w: &mut BitWriter, state: &mut u32, symbol: usize) {
        let (delta_bits, find) = self.symbols[symbol];
        let nb = (state.wrapping_add(delta_bits)) >> 16;
        w.add(u64::from(*state), nb);
        *state = u32::from(self.state_table[((*state >> nb) as i32 + find) as usize]);
    }

    /// The final state, which the decoder reads first.
    pub fn finish(&self, w: &mut BitWriter, state: u32) {
        w.add(u64::from(state), self.log);
    }
}

fn high_bit(v: usize) -> u32 {
    usize::BITS - 1 - v.leading_zeros()
}

/// The table log for `total` symbols of `0..=max_symbol` (`FSE_optimalTableLog`): small
/// tables for few symbols, so their description stays short. `total` ≥ 2.
pub fn table_log(max_log: u32, total: usize, max_symbol: usize) -> u32 {
    let max_bits_src = high_bit(total - 1).saturating_sub(2);
    let min_bits = (high_bit(total) + 1).min(high_bit(max_symbol.max(1)) + 2);
    max_bits_src.min(max_log).max(min_bits).clamp(5, max_log)
}

/// Counts scaled to sum to `2^log`, every symbol that occurs keeping at least 1. Needs at
/// most `2^log` distinct symbols, which [`table_log`] ensures.
pub fn normalize(counts: &[u32], log: u32) -> Vec<i16> {
    let mut total = 0u64;
    for &c in counts {
        total += u64::from(c);
    }
    let size = 1i64 << log;
    let mut norm = Vec::with_capacity(counts.len());
    let mut sum = 0i64;
    for &c in counts {
        let n = match c {
            0 => 0,
            _ => (((u64::from(c) << log) + total / 2) / total).max(1) as i16,
        };
        norm.push(n);
        sum += i64::from(n);
    }
    // The rounding's difference goes to (or comes from) the largest counts.
    while sum != size {
        let i = (0..norm.len()).max_by_key(|&i| norm[i]).unwrap_or(0);
        let change = if sum < size {
            size - sum
        } else {
            -(sum - size).min(i64::from(norm[i]) - 1).max(1)
        };
        norm[i] += change as i16;
        sum += change;
    }
    norm
}

/// An FSE table description (`FSE_writeNCount`): the accuracy log, then each count + 1 in
/// as few bits as the counts still to come need, runs of zeros as 2-bit repeat flags.
pub fn write_ncount(out: &mut Vec<u8>, norm: &[i16], log: u32) {
    let mut w = BitWriter::new(out);
    w.add(u64::from(log - 5), 4);
    let mut remaining = (1i32 << log) + 1;
    let mut threshold = 1i32 << log;
    let mut nb_bits = log + 1;
    let mut s = 0;
    let mut previous_zero = false;
    while s < norm.len() && remaining > 1 {
        if previous_zero {
            let mut start = s;
            while norm[s] == 0 {
                s += 1;
            }
            while s >= start + 24 {
                start += 24;
                w.add(0xFFFF, 16);
            }
            while s >= start + 3 {
                start += 3;
                w.add(3, 2);
            }
            w.add((s - start) as u64, 2);
        }
        let count = i32::from(norm[s]);
        s += 1;
        let max = 2 * threshold - 1 - remaining;
        remaining -= count.abs();
        let mut value = count + 1;
        if value >= threshold {
            value += max;
        }
        w.add(value as u64, nb_bits - u32::from(value < max));
        previous_zero = value == 1;
        while remaining < threshold {
            nb_bits -= 1;
            threshold >>= 1;
        }
    }
    w.flush();
}

/// log2 of `x` ≥ 1 in 1/256 bits, linear between powers of two (within 0.09 bits: enough
/// to choose a table, with no float code in the module).
fn log2_fixed(x: u32) -> u64 {
    let e = 31 - x.leading_zeros();
    u64::from((e << 8) + ((x << 8) >> e) - 256)
}

/// Estimated cost, in 1/256 bits, of coding `counts` with the distribution `dist` of
/// `2^log` (`None` when a symbol that occurs has no probability in it).
pub fn cost(counts: &[u32], dist: &[i16], log: u32) -> Option<u64> {
    let mut total = 0;
    for (s, &c) in counts.iter().enumerate() {
        if c > 0 {
            let p = match dist.get(s) {
                Some(&d) if d != 0 => d.max(1) as u32,
                _ => return None,
            };
            total += u64::from(c) * (u64::from(log << 8) - log2_fixed(p));
        }
    }
    Some(total)
}

/// The literals of a block below this many bytes are stored raw.
const MIN_HUFFMAN: usize = 64;
/// The longest Huffman code zstd allows.
const MAX_CODE_BITS: u8 = 11;

/// A literals section (RFC 8878 3.1.1.3.1): Huffman-coded in four streams when `HUFFMAN`
/// and that is smaller, else the bytes themselves. Both headers take their longest form (3 and 5
/// bytes), which holds any block's sizes: a few bytes per block for less code.
pub fn write_literals<const HUFFMAN: bool>(out: &mut Vec<u8>, lits: &[u8]) {
    let n = lits.len();
    let at = out.len();
    if !HUFFMAN || n < MIN_HUFFMAN || !huffman_literals(out, lits) {
        out.truncate(at);
        out.extend_from_slice(&((3 << 2) | (n as u32) << 4).to_le_bytes()[..3]);
        out.extend_from_slice(lits);
    }
}

/// Appends a Huffman-coded literals section, or returns false (leaving partial output)
/// when it would not be smaller than the raw bytes or the code cannot be described.
fn huffman_literals(out: &mut Vec<u8>, lits: &[u8]) -> bool {
    let n = lits.len();
    let mut counts = [0u32; 256];
    for &b in lits {
        counts[b as usize] += 1;
    }
    if counts[lits[0] as usize] as usize == n {
        return false;
    }
    let lengths = code_lengths(&counts);
    let max_bits = lengths.iter().copied().max().unwrap_or(0);
    let last = (0..256).rev().find(|&s| lengths[s] > 0).unwrap_or(0);
    let mut weights = [0u8; 255];
    for (w, &l) in weights.iter_mut().zip(&lengths[..last]) {
        *w = if l == 0 { 0 } else { max_bits + 1 - l };
    }
    // Header (written last, once the size is known), tree description, jump table, streams.
    let start = out.len();
    out.extend_from_slice(&[0; 6]);
    if !fse_weights(out, &weights[..last]) {
        return false;
    }
    let desc = out.len() - start - 6;
    if desc >= 128 {
        return false;
    }
    out[start + 5] = desc as u8;
    let codes = canonical_codes(&lengths, max_bits);
    let jump = out.len();
    out.extend_from_slice(&[0; 6]);
    for (k, part) in lits.chunks(n.div_ceil(4)).enumerate() {
        let before = out.len();
        let mut w = BitWriter::new(out);
        for &b in part.iter().rev() {
            let (code, len) = codes[b as usize];
            w.add(u64::from(code), u32::from(len));
        }
        w.close();
        let size = out.len() - before;
        if k < 3 {
            if size > 0xFFFF {
                return false;
            }
            out[jump + 2 * k..jump + 2 * k + 2].copy_from_slice(&(size as u16).to_le_bytes());
        }
    }
    let compressed = out.len() - start - 5;
    // Block type 2, four streams with 18-bit sizes.
    let h = 2 | 3 << 2 | (n as u64) << 4 | (compressed as u64) << 22;
    out[start..start + 5].copy_from_slice(&h.to_le_bytes()[..5]);
    compressed + 2 < n
}

/// Huffman code lengths of at most [`MAX_CODE_BITS`], for the symbols that occur (at
/// least two). Counts are halved until the longest code fits.
fn code_lengths(counts: &[u32; 256]) -> [u8; 256] {
    let mut freq = *counts;
    loop {
        let lengths = huffman(&freq);
        if lengths.iter().all(|&l| l <= MAX_CODE_BITS) {
            return lengths;
        }
        for f in freq.iter_mut().filter(|f| **f > 0) {
            *f = (*f >> 1).max(1);
        }
    }
}

/// Unlimited Huffman code lengths (two queues over the symbols sorted by count).
fn huffman(freq: &[u32; 256]) -> [u8; 256] {
    // Insertion sort by count (at most 256 symbols; a library sort costs the wasm module
    // more than this whole coder).
    let mut syms = [0u8; 256];
    let mut n = 0;
    for s in 0..256 {
        if freq[s] > 0 {
            let mut at = n;
            while at > 0 && freq[syms[at - 1] as usize] > freq[s] {
                syms[at] = syms[at - 1];
                at -= 1;
            }
            syms[at] = s as u8;
            n += 1;
        }
    }
    let mut weight = [0u64; 511];
    let mut parent = [0u16; 511];
    for i in 0..n {
        weight[i] = u64::from(freq[syms[i] as usize]);
    }
    let (mut leaf, mut inner) = (0, n);
    for k in n..2 * n - 1 {
        let mut pick = [0; 2];
        for p in &mut pick {
            *p = if leaf < n && (inner >= k || weight[leaf] <= weight[inner]) {
                leaf += 1;
                leaf - 1
            } else {
                inner += 1;
                inner - 1
            };
        }
        weight[k] = weight[pick[0]] + weight[pick[1]];
        parent[pick[0]] = k as u16;
        parent[pick[1]] = k as u16;
    }
    let mut depth = [0u8; 511];
    for k in (0..2 * n - 2).rev() {
        depth[k] = depth[parent[k] as usize] + 1;
    }
    let mut lengths = [0u8; 256];
    for i in 0..n {
        lengths[syms[i] as usize] = depth[i];
    }
    lengths
}

/// Each symbol's (code, length): the longest codes first, from 0, each length's symbols
/// in increasing order (RFC 8878 4.2.1.1).
fn canonical_codes(lengths: &[u8; 256], max_bits: u8) -> [(u32, u8); 256] {
    let mut per_len = [0u32; MAX_CODE_BITS as usize + 1];
    for &l in lengths {
        per_len[l as usize] += 1;
    }
    let mut next = [0u32; MAX_CODE_BITS as usize + 1];
    let mut code = 0;
    for len in (1..=max_bits as usize).rev() {
        next[len] = code;
        code = (code + per_len[len]) >> 1;
    }
    let mut codes = [(0u32, 0u8); 256];
    for (s, &l) in lengths.iter().enumerate() {
        if l > 0 {
            codes[s] = (next[l as usize], l);
            next[l as usize] += 1;
        }
    }
    codes
}

/// The Huffman tree description: the weights of all symbols but the last, FSE-coded with
/// two interleaved states (`HUF_compressWeights`; the caller writes their size before them). False when FSE
/// cannot code them (fewer than two, or a single value; such literals are stored raw).
fn fse_weights(out: &mut Vec<u8>, weights: &[u8]) -> bool {
    let n = weights.len();
    let mut counts = [0u32; MAX_CODE_BITS as usize + 1];
    for &w in weights {
        counts[w as usize] += 1;
    }
    if n < 2 || counts.iter().any(|&c| c as usize == n) {
        return false;
    }
    let max_symbol = (0..counts.len())
        .rev()
        .find(|&s| counts[s] > 0)
        .unwrap_or(0);
    let log = table_log(6, n, max_symbol);
    let norm = normalize(&counts[..=max_symbol], log);
    write_ncount(out, &norm, log);
    let fse = Fse::new(&norm, log);
    let mut w = BitWriter::new(out);
    let sym = |i: usize| weights[i] as usize;
    let mut i = n;
    let (mut s1, mut s2);
    if n % 2 == 1 {
        s1 = fse.init(sym(i - 1));
        s2 = fse.init(sym(i - 2));
        fse.encode(&mut w, &mut s1, sym(i - 3));
        i -= 3;
    } else {
        s2 = fse.init(sym(i - 1));
        s1 = fse.init(sym(i - 2));
        i -= 2;
    }
    while i > 0 {
        fse.encode(&mut w, &mut s2, sym(i - 1));
        fse.encode(&mut w, &mut s1, sym(i - 2));
        i -= 2;
    }
    fse.finish(&mut w, s2);
    fse.finish(&mut w, s1);
    w.close();
    true
}
