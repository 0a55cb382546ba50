//! numpy's `np.random.default_rng(seed)`: a `SeedSequence` of the seed feeding a PCG64
//! generator, and `Generator.permutation(n)`. HuggingFace `datasets` shuffles and splits
//! with exactly this (`Dataset.shuffle(seed)`, `train_test_split(seed=…)`), so the
//! cookbook's data order for a seed is this permutation; `tests/cookbook/oracle.py`
//! compares it with numpy itself.

/// numpy's `SeedSequence` constants (`numpy/random/bit_generator.pyx`).
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;
const POOL_SIZE: usize = 4;

/// PCG64's multiplier (`pcg64.h`, `PCG_DEFAULT_MULTIPLIER_128`).
const PCG_MULT: u128 = 0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645;

/// A seed as 32-bit words, least significant first (`_int_to_uint32_array`; 0 is `[0]`).
fn seed_words(seed: u64) -> Vec<u32> {
    let (lo, hi) = (seed as u32, (seed >> 32) as u32);
    if hi == 0 {
        vec![lo]
    } else {
        vec![lo, hi]
    }
}

fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut v = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(MULT_A);
    v = v.wrapping_mul(*hash_const);
    v ^ (v >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    r ^ (r >> XSHIFT)
}

/// `SeedSequence(seed).pool` (`mix_entropy`).
fn pool(seed: u64) -> [u32; POOL_SIZE] {
    let entropy = seed_words(seed);
    let mut hash_const = INIT_A;
    let mut mixer = [0u32; POOL_SIZE];
    for (i, m) in mixer.iter_mut().enumerate() {
        *m = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hash_const);
    }
    for i_src in 0..POOL_SIZE {
        for i_dst in 0..POOL_SIZE {
            if i_src != i_dst {
                let src = hashmix(mixer[i_src], &mut hash_const);
                mixer[i_dst] = mix(mixer[i_dst], src);
            }
        }
    }
    for &word in entropy.iter().skip(POOL_SIZE) {
        for m in mixer.iter_mut() {
            let src = hashmix(word, &mut hash_const);
            *m = mix(*m, src);
        }
    }
    mixer
}

/// `SeedSequence(seed).generate_state(4, np.uint64)`.
fn generate_state(pool: &[u32; POOL_SIZE]) -> [u64; 4] {
    let mut hash_const = INIT_B;
    let mut words = [0u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        let mut v = pool[i % POOL_SIZE] ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_B);
        v = v.wrapping_mul(hash_const);
        *w = v ^ (v >> XSHIFT);
    }
    // The uint32 words viewed as little-endian uint64s.
    std::array::from_fn(|i| u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32))
}

/// numpy's `Generator(PCG64(SeedSequence(seed)))`, for the draws the cookbook's data
/// pipeline makes.
#[derive(Debug, Clone)]
pub struct NumpyRng {
    state: u128,
    inc: u128,
    /// The unused upper half of the last 64-bit draw (`has_uint32`/`uinteger`).
    half: Option<u32>,
}

impl NumpyRng {
    /// `np.random.default_rng(seed)`.
    pub fn new(seed: u64) -> Self {
        let s = generate_state(&pool(seed));
        let init_state = (u128::from(s[0]) << 64) | u128::from(s[1]);
        let init_seq = (u128::from(s[2]) << 64) | u128::from(s[3]);
        // pcg_setseq_128_srandom_r
        let mut rng = NumpyRng {
            state: 0,
            inc: (init_seq << 1) | 1,
            half: None,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(init_state);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// `pcg64_next64`: step, then the XSL-RR output of the new state.
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let x = ((self.state >> 64) as u64) ^ (self.state as u64);
        x.rotate_right((self.state >> 122) as u32)
    }

    /// `pcg64_next32`: the low half of a 64-bit draw, then its high half.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(h) = self.half.take() {
            return h;
        }
        let v = self.next_u64();
        self.half = Some((v >> 32) as u32);
        v as u32
    }

    /// `random_interval(max)`: a value in `0..=max` by masked rejection.
    fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mask = u64::MAX >> max.leading_zeros();
        loop {
            let v = if max <= u64::from(u32::MAX) {
                u64::from(self.next_u32()) & mask
            } else {
                self.next_u64() & mask
            };
            if v <= max {
                return v;
            }
        }
    }

    /// `Generator.permutation(n)`: `arange(n)` shuffled by Fisher-Yates from the end.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut out: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.interval(i as u64) as usize;
            out.swap(i, j);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_holds_every_index_once() {
        for n in [0, 1, 2, 7, 1000] {
            let mut p = NumpyRng::new(5).permutation(n);
            p.sort_unstable();
            assert_eq!(p, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_order_and_others_differ() {
        let a = NumpyRng::new(42).permutation(50);
        assert_eq!(a, NumpyRng::new(42).permutation(50));
        assert_ne!(a, NumpyRng::new(43).permutation(50));
    }

    #[test]
    fn seeds_above_32_bits_use_both_words() {
        assert_eq!(seed_words(0), vec![0]);
        assert_eq!(seed_words(7), vec![7]);
        assert_eq!(seed_words((3 << 32) | 7), vec![7, 3]);
        assert_ne!(pool(7), pool((3 << 32) | 7));
    }
}
