//! Exact decimal conversions of floats, for JSON and messages: the shortest digits that
//! read back as the same `f64` or `f32` (Burger and Dybvig's free-format algorithm), and
//! correctly rounded powers of ten. Both run on a small fixed-size bignum, so they need
//! no tables: the tables of a fast formatter (zmij) and of serde_json's number parser
//! cost the wasm module more than this code (issue 8's size budget). Floats are rare in
//! the SDK's traffic (a few parameters per request), so the few microseconds a bignum
//! costs do not matter.
//!
//! `shortest(0.1, false)` is `([1], 0)` (0.1 = 0.1 × 10⁰), `shortest(123.0, false)` is
//! `([1, 2, 3], 3)`, and `pow10(23)` is exactly `1e23` (the tests hold these and more).

/// An unsigned integer of up to 96 × 32 bits: every f64 and its bounds, and a decimal of
/// up to 300 significant digits against a halfway point ([`nearest`]).
#[derive(Clone, Copy)]
struct Big {
    limbs: [u32; 96],
    len: usize,
}

impl Big {
    fn from_u64(v: u64) -> Big {
        let mut b = Big {
            limbs: [0; 96],
            len: 0,
        };
        b.limbs[0] = v as u32;
        b.limbs[1] = (v >> 32) as u32;
        b.len = 2;
        b.trim();
        b
    }
    fn trim(&mut self) {
        while self.len > 0 && self.limbs[self.len - 1] == 0 {
            self.len -= 1;
        }
    }
    fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for l in &mut self.limbs[..self.len] {
            let v = u64::from(*l) * u64::from(m) + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.limbs[self.len] = carry as u32;
            self.len += 1;
        }
    }
    fn mul_pow10(&mut self, mut n: u32) {
        while n >= 9 {
            self.mul_small(1_000_000_000);
            n -= 9;
        }
        self.mul_small(10u32.pow(n));
    }
    fn shl(&mut self, n: u32) {
        let (words, bits) = ((n / 32) as usize, n % 32);
        if self.len == 0 {
            return;
        }
        let mut out = [0u32; 96];
        for i in 0..self.len {
            let v = u64::from(self.limbs[i]) << bits;
            out[i + words] |= v as u32;
            out[i + words + 1] |= (v >> 32) as u32;
        }
        self.limbs = out;
        self.len += words + 1;
        self.trim();
    }
    fn cmp(&self, o: &Big) -> std::cmp::Ordering {
        self.len.cmp(&o.len).then_with(|| {
            self.limbs[..self.len]
                .iter()
                .rev()
                .cmp(o.limbs[..o.len].iter().rev())
        })
    }
    fn add(&self, o: &Big) -> Big {
        let mut r = *self;
        let n = self.len.max(o.len);
        let mut carry = 0u64;
        for i in 0..n {
            let v = u64::from(self.limbs[i]) + u64::from(o.limbs[i]) + carry;
            r.limbs[i] = v as u32;
            carry = v >> 32;
        }
        r.len = n;
        if carry > 0 {
            r.limbs[n] = 1;
            r.len += 1;
        }
        r
    }
    /// `self -= o` (requires `self >= o`).
    fn sub(&mut self, o: &Big) {
        let mut borrow = 0i64;
        for i in 0..self.len {
            let v = i64::from(self.limbs[i]) - i64::from(o.limbs[i]) - borrow;
            self.limbs[i] = v as u32;
            borrow = i64::from(v < 0);
        }
        self.trim();
    }
    fn bits(&self) -> u32 {
        if self.len == 0 {
            0
        } else {
            self.len as u32 * 32 - self.limbs[self.len - 1].leading_zeros()
        }
    }
}

/// The shortest decimal digits of a finite, positive `x` that read back as `x` (as an
/// `f32` when `single`), and the decimal point's position: `x = 0.d₁d₂…dₖ × 10^point`.
/// Ties between two shortest candidates go to the nearer, then to the even digit.
pub fn shortest(x: f64, single: bool) -> (Vec<u8>, i32) {
    // x = f × 2^e, and whether its neighbours are nearer below (at a power of two).
    let (f, e, min_e, p) = if single {
        let b = (x as f32).to_bits();
        let (frac, exp) = (u64::from(b & 0x7F_FFFF), ((b >> 23) & 0xFF) as i32);
        if exp == 0 {
            (frac, -149, true, 23)
        } else {
            (frac | 1 << 23, exp - 150, exp == 1, 23)
        }
    } else {
        let b = x.to_bits();
        let (frac, exp) = (b & ((1 << 52) - 1), ((b >> 52) & 0x7FF) as i32);
        if exp == 0 {
            (frac, -1074, true, 52)
        } else {
            (frac | 1 << 52, exp - 1075, exp == 1, 52)
        }
    };
    let even = f % 2 == 0;
    let uneven_gap = f == 1 << p && !min_e;
    // r / s = x, and m_minus / s, m_plus / s = half the gaps to the neighbours.
    let (mut r, mut s, mut m_minus, mut m_plus);
    if e >= 0 {
        let gap = Big::from_u64(1);
        r = Big::from_u64(f);
        r.shl(e as u32 + 1 + u32::from(uneven_gap));
        s = Big::from_u64(if uneven_gap { 4 } else { 2 });
        m_minus = gap;
        m_minus.shl(e as u32);
        m_plus = m_minus;
        if uneven_gap {
            m_plus.shl(1);
        }
    } else {
        r = Big::from_u64(f << (1 + u32::from(uneven_gap)));
        s = Big::from_u64(1);
        s.shl((-e) as u32 + 1 + u32::from(uneven_gap));
        m_minus = Big::from_u64(1);
        m_plus = Big::from_u64(if uneven_gap { 2 } else { 1 });
    }
    // k ≈ ceil(log10(x)), fixed up below.
    let log2 = (e + 64 - f.leading_zeros() as i32 - 1) as f64;
    let mut k = (log2 * std::f64::consts::LOG10_2 - 1e-10).ceil() as i32;
    if k >= 0 {
        s.mul_pow10(k as u32);
    } else {
        let n = (-k) as u32;
        r.mul_pow10(n);
        m_minus.mul_pow10(n);
        m_plus.mul_pow10(n);
    }
    let high = |r: &Big, m_plus: &Big, s: &Big| {
        let t = r.add(m_plus).cmp(s);
        if even {
            t.is_ge()
        } else {
            t.is_gt()
        }
    };
    if high(&r, &m_plus, &s) {
        k += 1;
        s.mul_small(10);
    }
    let mut digits = Vec::new();
    loop {
        r.mul_small(10);
        m_minus.mul_small(10);
        m_plus.mul_small(10);
        let mut d = 0u8;
        while r.cmp(&s).is_ge() {
            r.sub(&s);
            d += 1;
        }
        let low = if even {
            r.cmp(&m_minus).is_le()
        } else {
            r.cmp(&m_minus).is_lt()
        };
        let up = high(&r, &m_plus, &s);
        if !low && !up {
            digits.push(d);
            continue;
        }
        let mut twice = r;
        twice.shl(1);
        let last = match (low, up) {
            (true, false) => d,
            (false, true) => d + 1,
            _ => match twice.cmp(&s) {
                std::cmp::Ordering::Less => d,
                std::cmp::Ordering::Greater => d + 1,
                std::cmp::Ordering::Equal => d + d % 2,
            },
        };
        digits.push(last);
        return (digits, k);
    }
}

/// 10^n as the nearest `f64` (`n` ≤ 308), as the literal `1e{n}` is.
pub fn pow10(n: u32) -> f64 {
    if n <= 22 {
        // Exact: every power of ten up to 10^22 is an f64.
        return (0..n).fold(1.0, |a, _| a * 10.0);
    }
    let mut b = Big::from_u64(1);
    b.mul_pow10(n);
    // The top 64 bits, then round to 53 with the bits below as the sticky part.
    let bits = b.bits();
    let shift = bits - 64;
    let word = |i: u32| -> u64 {
        let (w, o) = ((i / 32) as usize, i % 32);
        let lo = u64::from(b.limbs[w]) | u64::from(*b.limbs.get(w + 1).unwrap_or(&0)) << 32;
        let hi = u64::from(*b.limbs.get(w + 2).unwrap_or(&0));
        (lo >> o) | if o == 0 { 0 } else { hi << (64 - o) }
    };
    let top = word(shift);
    let sticky = (0..shift).any(|i| b.limbs[(i / 32) as usize] >> (i % 32) & 1 == 1);
    let mant = top >> 11;
    let rest = top & 0x7FF;
    let round_up = rest > 0x400 || (rest == 0x400 && (sticky || mant & 1 == 1));
    (mant + u64::from(round_up)) as f64 * 2f64.powi((shift + 11) as i32)
}

/// The `f64` nearest to `digits × 10^e` (ties to even; `digits` the decimal significand's
/// ASCII digits, all of them), given `approx`, a value within an ulp or two of it (one
/// multiplication or division by a power of ten, as serde_json's default parser computes
/// it): each neighbour's halfway point is compared with the decimal value exactly, on the
/// bignum. Python reads JSON floats correctly rounded; this makes ours read the same
/// double (a metric of `3.8296939763484716` read one ulp off printed as
/// `3.829693976348472`). Past 300 significant digits the rest only breaks ties (a value
/// that equals a halfway point in its first 300 digits and differs after them is the one
/// case this can round the wrong way).
pub fn nearest(digits: &[u8], e: i32, approx: f64) -> f64 {
    const MAX: usize = 300;
    let digits = match digits.iter().position(|&d| d != b'0') {
        Some(i) => &digits[i..],
        None => return approx,
    };
    let fast = digits.len() <= 15 && e.unsigned_abs() <= 22;
    if fast || !approx.is_finite() || approx <= 0.0 {
        return approx;
    }
    let (kept, rest) = digits.split_at(digits.len().min(MAX));
    let e = e.saturating_add(rest.len() as i32);
    let sticky = rest.iter().any(|&d| d != b'0');
    if e.unsigned_abs() > 700 {
        return approx;
    }
    // Up to 19 digits, most comparisons fit in 128 bits; the bignum (built once, when
    // first needed) only when they do not: reading a JSON float costs little more than
    // the one-operation reading did.
    let small =
        (kept.len() <= 19).then(|| kept.iter().fold(0u64, |a, &d| a * 10 + u64::from(d - b'0')));
    let big = std::cell::OnceCell::new();
    let cmp = |x: f64| {
        let o = small
            .and_then(|v| cmp_halfway_u128(v, e, x))
            .unwrap_or_else(|| {
                let w = big.get_or_init(|| {
                    let mut w = Big::from_u64(0);
                    for &d in kept {
                        w.mul_small(10);
                        w = w.add(&Big::from_u64(u64::from(d - b'0')));
                    }
                    w
                });
                cmp_halfway(w, e, x)
            });
        match o {
            std::cmp::Ordering::Equal if sticky => std::cmp::Ordering::Greater,
            o => o,
        }
    };
    let mut x = approx;
    for _ in 0..4 {
        match cmp(x) {
            std::cmp::Ordering::Greater => {
                x = f64::from_bits(x.to_bits() + 1);
                // Past f64::MAX's halfway point: out of range (an estimate of f64::MAX only
                // comes from json's reading of long texts, where serde_json values are read).
                #[cfg(feature = "serde_json")]
                if x.is_infinite() {
                    return x;
                }
            }
            std::cmp::Ordering::Equal => {
                return if x.to_bits() & 1 == 1 {
                    f64::from_bits(x.to_bits() + 1)
                } else {
                    x
                }
            }
            std::cmp::Ordering::Less => {
                let below = f64::from_bits(x.to_bits() - 1);
                match cmp(below) {
                    std::cmp::Ordering::Less => x = below,
                    std::cmp::Ordering::Equal => {
                        return if x.to_bits() & 1 == 1 { below } else { x }
                    }
                    std::cmp::Ordering::Greater => return x,
                }
            }
        }
    }
    x
}

/// Positive `x` as `m × 2^q` (`m` the integer significand).
fn parts(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let (exp, frac) = ((bits >> 52) as i32, bits & ((1 << 52) - 1));
    if exp == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, exp - 1075)
    }
}

/// [`cmp_halfway`] in 128-bit integers, `None` when a side might not fit.
fn cmp_halfway_u128(w: u64, e: i32, x: f64) -> Option<std::cmp::Ordering> {
    let (m, q) = parts(x);
    if e.unsigned_abs() > 19 {
        return None;
    }
    let p = u128::from((0..e.unsigned_abs()).fold(1u64, |p, _| p * 10));
    let (mut a, mut b) = (u128::from(w), u128::from(2 * m + 1));
    // A product or shift fits when the operands' bits add up to at most 128.
    let bits = |v: u128| 128 - v.leading_zeros() as i32;
    if e >= 0 {
        (bits(a) + bits(p) <= 128).then_some(())?;
        a *= p;
    } else {
        (bits(b) + bits(p) <= 128).then_some(())?;
        b *= p;
    }
    let (v, n) = if q >= 1 {
        (&mut b, q - 1)
    } else {
        (&mut a, 1 - q)
    };
    (bits(*v) + n <= 128).then_some(())?;
    *v <<= n;
    Some(a.cmp(&b))
}

/// `w × 10^e` against the halfway point between positive `x` and the next `f64` up.
fn cmp_halfway(w: &Big, e: i32, x: f64) -> std::cmp::Ordering {
    let (m, q) = parts(x);
    // halfway = (2m + 1) × 2^(q - 1)
    let (mut a, mut b) = (*w, Big::from_u64(2 * m + 1));
    if e >= 0 {
        a.mul_pow10(e as u32);
    } else {
        b.mul_pow10(e.unsigned_abs());
    }
    if q >= 1 {
        b.shl((q - 1) as u32);
    } else {
        a.shl((1 - q) as u32);
    }
    a.cmp(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_docs_examples() {
        assert_eq!(shortest(0.1, false), (vec![1], 0)); // 0.1 = 0.1 × 10^0
        assert_eq!(shortest(123.0, false), (vec![1, 2, 3], 3));
        assert_eq!(shortest(0.1f32 as f64, true), (vec![1], 0));
        assert_eq!(pow10(23), 1e23);
    }

    fn zmij_digits(text: &str) -> (Vec<u8>, i32) {
        let (m, e) = text.split_once('e').unwrap_or((text, "0"));
        let e: i32 = e.trim_start_matches('+').parse().unwrap();
        let (i, f) = m.split_once('.').unwrap_or((m, ""));
        let all: Vec<u8> = i.bytes().chain(f.bytes()).map(|b| b - b'0').collect();
        let lead = all.iter().take_while(|&&d| d == 0).count();
        let mut d = all[lead..].to_vec();
        while d.last() == Some(&0) {
            d.pop();
        }
        (d, i.len() as i32 + e - lead as i32)
    }

    #[test]
    fn shortest_digits_match_zmij() {
        let mut next = crate::testing::xorshift(0x9E37_79B9_7F4A_7C15u64);
        let mut buf = zmij::Buffer::new();
        let mut check = |x: f64| {
            if x.is_finite() && x > 0.0 {
                assert_eq!(
                    shortest(x, false),
                    zmij_digits(buf.format_finite(x)),
                    "{x:e}"
                );
                let y = x as f32;
                if y.is_finite() && y > 0.0 {
                    let want = zmij_digits(buf.format_finite(y));
                    assert_eq!(shortest(f64::from(y), true), want, "{y:e}");
                }
            }
        };
        for x in [
            1.0,
            0.1,
            0.3,
            1e-7,
            1e21,
            1e22,
            1e23,
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            2.0,
            0.5,
            1024.0,
            9007199254740993.0,
            123456.789,
            1.5e300,
            f64::from_bits(0x000F_FFFF_FFFF_FFFF), // the largest subnormal
        ] {
            check(x);
        }
        for _ in 0..40_000 {
            check(f64::from_bits(next() >> 1));
            check(f64::from(f32::from_bits((next() as u32) >> 1)));
            check((next() % 100_000) as f64 / 1000.0);
        }
    }

    #[test]
    fn decimals_read_as_the_nearest_double() {
        // Rust's own parser is correctly rounded: the reference for each case.
        let mut cases: Vec<String> = [
            "3.8296939763484716",
            "0.1",
            "1e23",
            "9007199254740993",
            "2.2250738585072014e-308",
            "1.7976931348623157e308",
            "8.98846567431158e307",
            "4.35679794155569e-308",
            "1.00000000000000011102230246251565404236316680908203125",
            "123456789012345678e-30",
            "9.999999999999999e22",
            "7.038531e-26",
            "0.30000000000000004",
            "2.0000000000000004",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut r: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..3000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let digits = r % 10_000_000_000_000_000_000;
            let e = (r >> 40) as i32 % 600 - 300;
            cases.push(format!("{digits}e{e}"));
        }
        for text in &cases {
            let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
            let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
            let digits = format!("{int}{frac}");
            let Ok(w) = digits.parse::<u64>() else {
                continue;
            };
            let e = exp.parse::<i32>().unwrap() - frac.len() as i32;
            if e.unsigned_abs() > 308 {
                continue; // past the bignum's reach: `nearest` keeps the approximation
            }
            let approx = if e >= 0 {
                w as f64 * pow10(e.unsigned_abs().min(308))
            } else {
                w as f64 / pow10(e.unsigned_abs().min(308))
            };
            let want: f64 = text.parse().unwrap();
            if !approx.is_finite()
                || approx == 0.0
                || want == 0.0
                || !want.is_finite()
                || want < f64::MIN_POSITIVE
            {
                continue;
            }
            assert_eq!(nearest(digits.as_bytes(), e, approx), want, "{text}");
        }
    }

    #[test]
    fn powers_of_ten_are_the_nearest_floats() {
        for (n, want) in (0..=308).map(|n| (n, format!("1e{n}").parse::<f64>().unwrap())) {
            assert_eq!(pow10(n), want, "10^{n}");
        }
    }
}
