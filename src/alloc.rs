//! The wasm module's memory allocator: size classes with free lists over memory taken
//! from `memory.grow`. It replaces std's dlmalloc, which cost the module about 3 KB
//! gzip (issue 8's size budget), and suits what the SDK allocates: a single thread,
//! and blocks of recurring sizes (request bodies, JSON, token arrays) that are freed
//! and asked for again, so steady-state work reuses freed blocks and memory stays flat.
//!
//! Classes: 8, 16 and 32 bytes, then four per power of two (1, 1.25, 1.5 and 1.75
//! times it), so a block wastes at most a fifth of its size. A freed block goes to the
//! list of its class; a request takes the head of its class's list, else carves a new
//! block from the end of the heap, which grows by whole pages. Blocks are 8-aligned; a
//! request for a larger alignment gets a fresh block aligned as asked.
//!
//! It is the global allocator of wasm builds only; native builds (tests) use the
//! system's, and test this one over a private arena.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::ptr::null_mut;

const PAGE: usize = 65536;
const CLASSES: usize = 3 + 4 * 27;

/// The class index and block size of a request of `size` bytes (below 4 GiB).
fn class(size: usize) -> (usize, usize) {
    let s = size.max(8);
    if s <= 32 {
        let i = (usize::BITS - (s - 1).leading_zeros()) as usize - 3; // 8 → 0, 16 → 1, 32 → 2
        return (i, 8 << i);
    }
    let k = (usize::BITS - 1 - (s - 1).leading_zeros()) as usize; // s - 1 in [2^k, 2^(k+1))
    let shift = k - 2;
    let q = (s - 1) >> shift; // 4..=7
    (3 + (k - 5) * 4 + (q - 4), (q + 1) << shift)
}

struct State {
    /// The next free byte of the heap, and its end.
    top: usize,
    end: usize,
    /// The head of each class's free list (0: empty); a free block's first word holds
    /// the next one.
    free: [usize; CLASSES],
    /// Grows the memory by `pages` and returns its old size in pages (the address of
    /// the new pages / 64 KiB), or `usize::MAX` if it cannot.
    grow: fn(usize) -> usize,
}

/// The allocator.
pub struct Allocator(UnsafeCell<State>);

// SAFETY: wasm modules run on one thread (no shared-memory threads are built); the
// native tests use their own instances from one thread each.
unsafe impl Sync for Allocator {}

impl Allocator {
    /// An allocator with an empty heap over `grow`.
    pub const fn new(grow: fn(usize) -> usize) -> Self {
        Allocator(UnsafeCell::new(State {
            top: 0,
            end: 0,
            free: [0; CLASSES],
            grow,
        }))
    }
}

impl State {
    /// `size` bytes aligned to `align` from the end of the heap (growing memory).
    unsafe fn carve(&mut self, size: usize, align: usize) -> *mut u8 {
        loop {
            let start = (self.top + align - 1) & !(align - 1);
            let Some(end) = start.checked_add(size) else {
                return null_mut();
            };
            if end <= self.end {
                self.top = end;
                return start as *mut u8;
            }
            let pages = (end - self.end).div_ceil(PAGE);
            let old = (self.grow)(pages);
            if old == usize::MAX {
                return null_mut();
            }
            if old * PAGE != self.end {
                // First use (or memory grown by someone else): continue in the new pages.
                self.top = old * PAGE;
            }
            self.end = (old + pages) * PAGE;
        }
    }
}

unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let st = &mut *self.0.get();
        let (i, block) = class(layout.size());
        if layout.align() <= 8 {
            let head = st.free[i];
            if head != 0 {
                st.free[i] = *(head as *const usize);
                return head as *mut u8;
            }
            return st.carve(block, 8);
        }
        st.carve(block.next_multiple_of(layout.align()), layout.align())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let st = &mut *self.0.get();
        let (i, _) = class(layout.size());
        *(ptr as *mut usize) = st.free[i];
        st.free[i] = ptr as usize;
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= 8 && class(layout.size()).0 == class(new_size).0 {
            return ptr; // the block already holds `new_size` bytes
        }
        let new = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
        if !new.is_null() {
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}

/// The wasm module's allocator, over its memory.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: Allocator = Allocator::new(core::arch::wasm32::memory_grow::<0>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_hold_their_requests_and_waste_little() {
        let mut last = (0, 8);
        for size in 1..300_000usize {
            let (i, block) = class(size);
            assert!(block >= size && block % 8 == 0, "{size}: {block}");
            assert!(size <= 32 || (block - size) * 5 <= block, "{size}: {block}");
            assert!(i >= last.0 && (i > last.0) == (block != last.1), "{size}");
            last = (i, block);
        }
        assert!(class((1 << 32) - 1).0 < CLASSES);
    }

    // A 64 MiB arena standing in for wasm memory (one per test thread).
    thread_local! {
        static ARENA: (usize, std::cell::Cell<usize>) = {
            let l = Layout::from_size_align(64 << 20, PAGE).unwrap();
            (unsafe { std::alloc::alloc(l) } as usize, std::cell::Cell::new(0))
        };
    }

    fn grow(pages: usize) -> usize {
        ARENA.with(|(base, used)| {
            if used.get() + pages > 1024 {
                return usize::MAX;
            }
            let old = base / PAGE + used.get();
            used.set(used.get() + pages);
            old
        })
    }

    #[test]
    fn blocks_are_distinct_reused_and_aligned() {
        let a = Allocator::new(grow);
        unsafe {
            let l = |n| Layout::from_size_align(n, 8).unwrap();
            let mut live: Vec<(*mut u8, usize)> = Vec::new();
            for (k, n) in [1usize, 7, 8, 9, 33, 100, 1000, 70_000, 5, 2_000_000]
                .iter()
                .enumerate()
            {
                let p = a.alloc(l(*n));
                assert!(!p.is_null() && p as usize % 8 == 0);
                std::ptr::write_bytes(p, k as u8, *n);
                live.push((p, *n));
            }
            // Every block kept its own bytes (no overlap).
            for (k, (p, n)) in live.iter().enumerate() {
                assert!(std::slice::from_raw_parts(*p, *n)
                    .iter()
                    .all(|&b| b == k as u8));
            }
            // A freed block is the next one of its class.
            let (p, n) = live[4];
            a.dealloc(p, l(n));
            assert_eq!(a.alloc(l(34)), p);
            // Growing within the class keeps the block; past it moves and keeps the bytes.
            let (p, n) = live[6];
            assert_eq!(a.realloc(p, l(n), n + 20), p);
            let q = a.realloc(p, l(n + 20), 10_000);
            assert_ne!(q, p);
            assert!(std::slice::from_raw_parts(q, n).iter().all(|&b| b == 6));
            // Over-aligned requests are aligned.
            let big = a.alloc(Layout::from_size_align(24, 256).unwrap());
            assert_eq!(big as usize % 256, 0);
            // Out of memory is a null pointer, not a panic.
            assert!(a.alloc(l(100 << 20)).is_null());
        }
    }

    #[test]
    fn steady_alloc_free_cycles_stop_growing() {
        let a = Allocator::new(grow);
        let used = || ARENA.with(|(_, u)| u.get());
        let cycle = || unsafe {
            let ps: Vec<_> = (1..300usize)
                .map(|i| (a.alloc(Layout::from_size_align(i * 37, 8).unwrap()), i * 37))
                .collect();
            for (p, n) in ps {
                a.dealloc(p, Layout::from_size_align(n, 8).unwrap());
            }
        };
        cycle();
        let after_first = used();
        for _ in 0..50 {
            cycle();
        }
        assert_eq!(used(), after_first);
    }
}
