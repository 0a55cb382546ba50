//! zstd's entropy coders, encoding side (RFC 8878 4): FSE tables, either predefined or
//! normalized from a block's own counts and sent with it, and Huffman-coded literals.
//! They follow libzstd's encoder (`FSE_buildCTable`, `FSE_writeNCount`, `HUF_compress4X`)
//! closely enough that its decoder and ruzstd read every stream they write.

/// Little-endian bit accumulator (zstd's bitstreams are read from their end).
pub(super) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    bits: u32,
}

impl<'a> BitWriter<'a> {
    pub(super) fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            bits: 0,
        }
    }

    /// Appends the low `n` bits of `v`, `n` ≤ 32.
    #[inline]
    pub(super) fn add(&mut self, v: u64, n: u32) {
        self.acc |= (v & ((1u64 << n) - 1)) << self.bits;
        self.bits += n;
        if self.bits >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.bits -= 32;
        }
    }

    /// The bits still held, padded with zeros to whole bytes.
    pub(super) fn flush(self) {
        let n = self.bits.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..n]);
    }

    /// The end marker (a 1 bit), then [`BitWriter::flush`].
    pub(super) fn close(mut self) {
        self.add(1, 1);
        self.flush();
    }
}

/// An FSE encoding table (zstd's `FSE_buildCTable`).
pub(super) struct Fse {
    pub(super) log: u32,
    state_table: Vec<u16>,
    /// Per symbol: (deltaNbBits, deltaFindState).
    symbols: Vec<(u32, i32)>,
}

impl Fse {
    /// The table of a distribution summing to `2^log`: counts, -1 for "less than 1", 0 for
    /// a symbol that never occurs.
    pub(super) fn new(dist: &[i16], log: u32) -> Fse {
        let size = 1usize << log;
        let mut symbol_at = vec![0u8; size];
        let mut high = size - 1;
        let mut cumul = vec![0u32; dist.len() + 1];
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
        let mut next = cumul.clone();
        for (u, &s) in symbol_at.iter().enumerate() {
            state_table[next[s as usize] as usize] = (size + u) as u16;
            next[s as usize] += 1;
        }
        let mut total = 0i32;
        let symbols = dist
            .iter()
            .map(|&c| match c {
                0 => (((log + 1) << 16) - (1 << log), 0),
                -1 | 1 => {
                    let t = ((log << 16) - (1 << log), total - 1);
                    total += 1;
                    t
                }
                _ => {
                    let c = c as u32;
                    let max_bits_out = log - (31 - (c - 1).leading_zeros());
                    let min_state_plus = c << max_bits_out;
                    let t = (
                        (max_bits_out << 16).wrapping_sub(min_state_plus),
                        total - c as i32,
                    );
                    total += c as i32;
                    t
                }
            })
            .collect();
        Fse {
            log,
            state_table,
            symbols,
        }
    }

    /// The table of RLE mode: one symbol, no bits at all.
    pub(super) fn rle() -> Fse {
        Fse {
            log: 0,
            state_table: vec![0],
            symbols: vec![(0, 0); 64],
        }
    }

    /// The first state, for the last symbol coded (`FSE_initCState2`).
    pub(super) fn init(&self, symbol: usize) -> u32 {
        let (delta_bits, find) = self.symbols[symbol];
        let nb = (delta_bits + (1 << 15)) >> 16;
        let v = (nb << 16).wrapping_sub(delta_bits);
        u32::from(self.state_table[((v >> nb) as i32 + find) as usize])
    }

    #[inline]
    pub(super) fn encode(&self, w: &mut BitWriter, state: &mut u32, symbol: usize) {
        let (delta_bits, find) = self.symbols[symbol];
        let nb = (state.wrapping_add(delta_bits)) >> 16;
        w.add(u64::from(*state), nb);
        *state = u32::from(self.state_table[((*state >> nb) as i32 + find) as usize]);
    }

    /// The final state, which the decoder reads first.
    pub(super) fn finish(&self, w: &mut BitWriter, state: u32) {
        w.add(u64::from(state), self.log);
    }
}

fn high_bit(v: usize) -> u32 {
    usize::BITS - 1 - v.leading_zeros()
}

/// The table log for `total` symbols of `0..=max_symbol` (`FSE_optimalTableLog`): small
/// tables for few symbols, so their description stays short. `total` ≥ 2.
pub(super) fn table_log(max_log: u32, total: usize, max_symbol: usize) -> u32 {
    let max_bits_src = high_bit(total - 1).saturating_sub(2);
    let min_bits = (high_bit(total) + 1).min(high_bit(max_symbol.max(1)) + 2);
    max_bits_src.min(max_log).max(min_bits).clamp(5, max_log)
}

/// Counts scaled to sum to `2^log`, every symbol that occurs keeping at least 1. Needs at
/// most `2^log` distinct symbols, which [`table_log`] ensures.
pub(super) fn normalize(counts: &[u32], log: u32) -> Vec<i16> {
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    let size = 1i64 << log;
    let mut norm: Vec<i16> = counts
        .iter()
        .map(|&c| match c {
            0 => 0,
            _ => ((((u64::from(c) << log) + total / 2) / total).max(1)) as i16,
        })
        .collect();
    let mut sum: i64 = norm.iter().map(|&n| i64::from(n)).sum();
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
pub(super) fn write_ncount(out: &mut Vec<u8>, norm: &[i16], log: u32) {
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

/// Estimated bits to code `counts` with the distribution `dist` of `2^log`
/// (`None` when a symbol that occurs has no probability in it).
pub(super) fn cost_bits(counts: &[u32], dist: &[i16], log: u32) -> Option<f64> {
    let mut bits = 0.0;
    for (s, &c) in counts.iter().enumerate() {
        if c > 0 {
            let p = match dist.get(s) {
                Some(&d) if d != 0 => f64::from(d.max(1)),
                _ => return None,
            };
            bits += f64::from(c) * (f64::from(log) - p.log2());
        }
    }
    Some(bits)
}

/// The literals of a block below this many bytes are stored raw.
const MIN_HUFFMAN: usize = 64;
/// The longest Huffman code zstd allows.
const MAX_CODE_BITS: u8 = 11;

/// A literals section (RFC 8878 3.1.1.3.1): Huffman-coded in four streams when that is
/// smaller, one repeated byte as RLE, else the bytes themselves.
pub(super) fn write_literals(out: &mut Vec<u8>, lits: &[u8]) {
    let n = lits.len();
    if n >= MIN_HUFFMAN {
        let mut counts = [0u32; 256];
        for &b in lits {
            counts[b as usize] += 1;
        }
        if counts[lits[0] as usize] as usize == n {
            write_literals_header(out, 1, n);
            out.push(lits[0]);
            return;
        }
        let at = out.len();
        if huffman_literals(out, lits, &counts) {
            return;
        }
        out.truncate(at);
    }
    write_literals_header(out, 0, n);
    out.extend_from_slice(lits);
}

/// The header of a raw (`kind` 0) or RLE (1) literals section of `n` bytes.
fn write_literals_header(out: &mut Vec<u8>, kind: u32, n: usize) {
    let n = n as u32;
    if n < 32 {
        out.push((kind | n << 3) as u8);
    } else if n < 4096 {
        out.extend_from_slice(&(kind | (1 << 2) | (n << 4)).to_le_bytes()[..2]);
    } else {
        out.extend_from_slice(&(kind | (3 << 2) | (n << 4)).to_le_bytes()[..3]);
    }
}

/// Appends a Huffman-coded literals section, or returns false (leaving partial output)
/// when it would not be smaller than the raw bytes or the code cannot be described.
fn huffman_literals(out: &mut Vec<u8>, lits: &[u8], counts: &[u32; 256]) -> bool {
    let n = lits.len();
    let lengths = code_lengths(counts);
    let max_bits = lengths.iter().copied().max().unwrap_or(0);
    let last = (0..256).rev().find(|&s| lengths[s] > 0).unwrap_or(0);
    let weights: Vec<u8> = lengths[..last]
        .iter()
        .map(|&l| if l == 0 { 0 } else { max_bits + 1 - l })
        .collect();
    // Header (written last, once the size is known), tree description, jump table, streams.
    let header_len = if n < 1024 {
        3
    } else if n < 16384 {
        4
    } else {
        5
    };
    let start = out.len();
    out.resize(start + header_len, 0);
    if !write_weights(out, &weights) {
        return false;
    }
    let codes = canonical_codes(&lengths, max_bits);
    let jump = out.len();
    out.resize(jump + 6, 0);
    let segment = n.div_ceil(4);
    for (k, part) in lits.chunks(segment).enumerate() {
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
    let compressed = out.len() - start - header_len;
    if compressed + header_len >= n + 3 {
        return false;
    }
    let (format, bits) = match header_len {
        3 => (1u64, 10),
        4 => (2, 14),
        _ => (3, 18),
    };
    let h = 2 | format << 2 | (n as u64) << 4 | (compressed as u64) << (4 + bits);
    out[start..start + header_len].copy_from_slice(&h.to_le_bytes()[..header_len]);
    true
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
    let mut syms: Vec<usize> = (0..256).filter(|&s| freq[s] > 0).collect();
    syms.sort_by_key(|&s| freq[s]);
    let n = syms.len();
    let mut weight: Vec<u64> = syms.iter().map(|&s| u64::from(freq[s])).collect();
    let mut parent = vec![0usize; 2 * n - 1];
    let (mut leaf, mut inner) = (0, n);
    for k in n..2 * n - 1 {
        let mut pick = |weight: &[u64]| {
            if leaf < n && (inner >= k || weight[leaf] <= weight[inner]) {
                leaf += 1;
                leaf - 1
            } else {
                inner += 1;
                inner - 1
            }
        };
        let (a, b) = (pick(&weight), pick(&weight));
        weight.push(weight[a] + weight[b]);
        parent[a] = k;
        parent[b] = k;
    }
    let mut depth = vec![0u8; 2 * n - 1];
    for k in (0..2 * n - 2).rev() {
        depth[k] = depth[parent[k]] + 1;
    }
    let mut lengths = [0u8; 256];
    for (i, &s) in syms.iter().enumerate() {
        lengths[s] = depth[i];
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

/// The Huffman tree description: the weights of all symbols but the last, FSE-coded
/// with two interleaved states when that is smaller, else four bits each. False when
/// neither fits the format (at most 127 bytes, or 128 weights).
fn write_weights(out: &mut Vec<u8>, weights: &[u8]) -> bool {
    let at = out.len();
    out.push(0);
    let fse_ok = fse_weights(out, weights);
    let fse_len = out.len() - at - 1;
    let direct_len = weights.len().div_ceil(2);
    if fse_ok && fse_len < 128 && fse_len <= direct_len {
        out[at] = fse_len as u8;
        return true;
    }
    out.truncate(at);
    if weights.len() > 128 {
        return false;
    }
    out.push(127 + weights.len() as u8);
    for pair in weights.chunks(2) {
        out.push(pair[0] << 4 | pair.get(1).copied().unwrap_or(0));
    }
    true
}

/// The weights FSE-coded (`HUF_compressWeights`); false when FSE cannot code them (fewer
/// than two, or a single value).
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
