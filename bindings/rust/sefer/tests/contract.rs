// SPDX-License-Identifier: MIT
//! The GlobalAlloc contract, for `Sefer` and for a `Heap`: alignment, zeroing, realloc,
//! zero-size layouts. The test binary's own allocator is the system's; sefer is called
//! directly, and every block is checked to be sefer's (`sefer::owns`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use sefer::{Heap, Sefer};

const SIZES: [usize; 9] = [1, 8, 24, 100, 1000, 4096, 70_000, (1 << 20) + 7, 5 << 20];
const MIB: usize = 1 << 20;

fn aligns() -> impl Iterator<Item = usize> {
    (0..=20).map(|s| 1usize << s)
}

/// The tests that make heaps, one at a time: heap_visit_and_destroy counts the live heaps.
fn heap_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A byte that depends on the position and on a seed, so that a shifted copy shows.
fn pat(i: usize, seed: usize) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 8) ^ seed) as u8
}

unsafe fn fill(p: *mut u8, n: usize, seed: usize) {
    for i in 0..n {
        *p.add(i) = pat(i, seed);
    }
}

unsafe fn check_filled(p: *mut u8, n: usize, seed: usize, what: &str) {
    for i in 0..n {
        assert_eq!(*p.add(i), pat(i, seed), "{}: byte {} of {} changed", what, i, n);
    }
}

/// Every power-of-two alignment from 1 to 1 MiB, at sizes from 1 byte to 5 MiB: the block is
/// sefer's, aligned, holds its size, and can be written whole.
fn alignments(a: &dyn GlobalAlloc) {
    for align in aligns() {
        for &size in SIZES.iter() {
            let l = Layout::from_size_align(size, align).unwrap();
            unsafe {
                let p = a.alloc(l);
                assert!(!p.is_null(), "alloc {:?}", l);
                assert_eq!(p as usize % align, 0, "alloc {:?} -> {:p}", l, p);
                assert!(sefer::owns(p), "{:p} not sefer's", p);
                assert!(sefer::usable_size(p) >= size, "usable_size < {}", size);
                fill(p, size, align);
                check_filled(p, size, align, "aligned block");
                a.dealloc(p, l);
            }
        }
    }
}

#[test]
fn every_alignment_sefer() {
    alignments(&Sefer);
}

#[test]
fn every_alignment_heap() {
    let _one = heap_lock();
    alignments(&Heap::new().unwrap());
}

/// Alignments far beyond 1 MiB are served too (they cost address space, not memory); one
/// above max_alignment() gets null. (max_alignment() itself, 2^46 by default, needs a free
/// aligned half of the address space, which a process with its stack up there lacks.)
#[test]
fn huge_alignments() {
    let max = sefer::max_alignment();
    assert!(max >= 1 << 40, "max_alignment {}", max);
    for shift in [24, 32, 40] {
        let l = Layout::from_size_align(64, 1 << shift).unwrap();
        unsafe {
            let p = Sefer.alloc(l);
            assert!(!p.is_null() && p as usize % (1 << shift) == 0, "alignment 2^{}", shift);
            fill(p, 64, shift);
            Sefer.dealloc(p, l);
        }
    }
    if let Ok(l) = Layout::from_size_align(64, max * 2) {
        assert!(unsafe { Sefer.alloc(l) }.is_null(), "alignment {} served", max * 2);
    }
}

/// alloc_zeroed on blocks that were just dirtied and freed: the zeroed block must often be one
/// of them (checked: else the test would prove nothing about reuse), and be zero throughout.
fn zeroed_after_dirty(a: &dyn GlobalAlloc) {
    for &(size, align) in &[
        (16, 8),
        (24, 8),
        (200, 16),
        (3000, 64),
        (20_000, 4096),
        (300_000, 16),
        (3 << 20, 16),
        (64, 65_536),
    ] {
        let l = Layout::from_size_align(size, align).unwrap();
        let mut dirty = HashSet::new();
        let mut reused = 0;
        for _round in 0..4 {
            unsafe {
                let ps: Vec<*mut u8> = (0..32).map(|_| a.alloc(l)).collect();
                for &p in &ps {
                    assert!(!p.is_null());
                    std::ptr::write_bytes(p, 0xa5, sefer::usable_size(p));
                    dirty.insert(p as usize);
                }
                for &p in ps.iter().rev() {
                    a.dealloc(p, l);
                }
                let zs: Vec<*mut u8> = (0..32).map(|_| a.alloc_zeroed(l)).collect();
                for &z in &zs {
                    assert!(!z.is_null() && z as usize % align == 0);
                    reused += dirty.contains(&(z as usize)) as usize;
                    let bytes = std::slice::from_raw_parts(z, size);
                    assert!(
                        bytes.iter().all(|&b| b == 0),
                        "alloc_zeroed {:?}: a byte is not zero",
                        l
                    );
                }
                for &z in &zs {
                    std::ptr::write_bytes(z, 0x5a, size);
                    a.dealloc(z, l);
                }
            }
        }
        assert!(reused > 0, "{:?}: alloc_zeroed never reused a dirty block", l);
    }
}

#[test]
fn alloc_zeroed_after_reuse_sefer() {
    zeroed_after_dirty(&Sefer);
}

#[test]
fn alloc_zeroed_after_reuse_heap() {
    let _one = heap_lock();
    zeroed_after_dirty(&Heap::new().unwrap());
}

/// Growing then shrinking through size classes, from small to large blocks and back, at
/// alignments from 1 to 1 MiB: the contents up to the smaller size are kept at every step.
fn realloc_keeps(a: &dyn GlobalAlloc) {
    let steps = [
        1,
        17,
        100,
        1000,
        1500,
        5000,
        40_000,
        70_000,
        300_000,
        5 << 20,
        9 << 20,
        200_000,
        3000,
        48,
        10,
        0,
        64,
    ];
    for align in [1, 8, 16, 32, 64, 4096, 65_536, MIB] {
        unsafe {
            let mut l = Layout::from_size_align(steps[0], align).unwrap();
            let mut p = a.alloc(l);
            fill(p, l.size(), align);
            for &n in &steps[1..] {
                let q = a.realloc(p, l, n);
                assert!(!q.is_null(), "realloc {:?} -> {}", l, n);
                assert_eq!(q as usize % align, 0, "realloc {:?} -> {} lost the alignment", l, n);
                assert!(sefer::owns(q));
                let kept = l.size().min(n);
                check_filled(q, kept, align, "realloc");
                l = Layout::from_size_align(n, align).unwrap();
                fill(q, n, align);
                p = q;
            }
            a.dealloc(p, l);
        }
    }
}

#[test]
fn realloc_keeps_contents_sefer() {
    realloc_keeps(&Sefer);
}

#[test]
fn realloc_keeps_contents_heap() {
    let _one = heap_lock();
    realloc_keeps(&Heap::new().unwrap());
}

/// Zero-size layouts, which Layout permits: a real, aligned, unique block, freed normally;
/// realloc to and from zero.
fn zero_size(a: &dyn GlobalAlloc) {
    for align in aligns().take(13) {
        let l = Layout::from_size_align(0, align).unwrap();
        unsafe {
            let p = a.alloc(l);
            let q = a.alloc(l);
            assert!(!p.is_null() && !q.is_null() && p != q, "zero-size blocks not unique");
            assert!(p as usize % align == 0 && q as usize % align == 0);
            assert!(sefer::owns(p));
            let z = a.alloc_zeroed(l);
            assert!(!z.is_null());
            a.dealloc(z, l);
            let big = a.realloc(p, l, 100);
            assert!(!big.is_null() && big as usize % align == 0);
            fill(big, 100, 3);
            let l100 = Layout::from_size_align(100, align).unwrap();
            let none = a.realloc(big, l100, 0);
            assert!(!none.is_null() && sefer::owns(none), "realloc to 0 must return a block");
            a.dealloc(none, l);
            a.dealloc(q, l);
        }
    }
}

#[test]
fn zero_size_sefer() {
    zero_size(&Sefer);
}

#[test]
fn zero_size_heap() {
    let _one = heap_lock();
    zero_size(&Heap::new().unwrap());
}

/// The check that the tests above could fail: System's blocks are not sefer's.
#[test]
fn owns_tells_allocators_apart() {
    let l = Layout::from_size_align(64, 8).unwrap();
    unsafe {
        let s = System.alloc(l);
        let f = Sefer.alloc(l);
        assert!(!sefer::owns(s), "System's block taken for sefer's");
        assert!(sefer::owns(f));
        System.dealloc(s, l);
        Sefer.dealloc(f, l);
    }
    let on_stack = 0u64;
    assert!(!sefer::owns(&on_stack));
    assert!(!sefer::owns(std::ptr::null::<u8>()));
}

/// A block freed on another thread: sefer counts a cross-thread free.
#[test]
fn dealloc_on_another_thread() {
    let l = Layout::from_size_align(48, 16).unwrap();
    let before = sefer::stats().xthread_frees;
    let ps: Vec<usize> = (0..100).map(|_| unsafe { Sefer.alloc(l) } as usize).collect();
    std::thread::spawn(move || {
        for p in ps {
            unsafe { Sefer.dealloc(p as *mut u8, l) };
        }
    })
    .join()
    .unwrap();
    assert!(sefer::stats().xthread_frees >= before + 100);
}

/// A heap's blocks are visited, dropping the heap frees them (stats().heaps goes back), and
/// sefer's invariants hold afterwards.
#[test]
fn heap_visit_and_destroy() {
    let _one = heap_lock();
    let heaps = sefer::stats().heaps;
    let mut h = Heap::new().unwrap();
    assert!(sefer::stats().heaps > heaps);
    let l = Layout::from_size_align(40, 8).unwrap();
    let mut mine: HashSet<usize> =
        (0..500).map(|_| h.alloc(l).unwrap().as_ptr() as usize).collect();
    let big = h.alloc(Layout::from_size_align(3 << 20, 4096).unwrap()).unwrap();
    mine.insert(big.as_ptr() as usize);
    let mut seen = 0;
    assert!(h.for_each_block(|b, usable| {
        assert!(mine.contains(&(b.as_ptr() as usize)) && usable >= 40);
        seen += 1;
        true
    }));
    assert_eq!(seen, mine.len());
    let mut first = 0;
    assert!(!h.for_each_block(|_, _| {
        first += 1;
        false
    }));
    assert_eq!(first, 1);
    h.collect(true);
    drop(h);
    assert_eq!(sefer::stats().heaps, heaps);
    assert_eq!(sefer::check_heap(), 0);
}

#[test]
fn heap_visit_panic_resumes() {
    let _one = heap_lock();
    let mut h = Heap::new().unwrap();
    let _p = h.alloc(Layout::new::<u64>()).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        h.for_each_block(|_, _| panic!("in visit"))
    }));
    assert!(r.is_err());
}

#[test]
fn version_and_stats() {
    assert!(sefer::version().starts_with("sefer "), "{}", sefer::version());
    let st = sefer::stats();
    assert!(st.segments > 0 || st.segments_mapped == 0);
}

/// The bytes in use follow a large block's life. They are counted at the query, for the
/// whole process, while other tests run: the block is 256 MiB (mapped, never touched) and the
/// margin 128 MiB, far more than the other tests hold at once.
#[test]
fn stats_count_bytes_in_use() {
    let layout = Layout::from_size_align(256 * MIB, 16).unwrap();
    let before = sefer::stats().in_use_bytes;
    let p = unsafe { Sefer.alloc(layout) };
    assert!(!p.is_null());
    let during = sefer::stats().in_use_bytes;
    assert!(during >= before + 128 * MIB as u64, "before {before}, during {during}");
    unsafe { Sefer.dealloc(p, layout) };
    let after = sefer::stats().in_use_bytes;
    assert!(after + (128 * MIB as u64) <= during, "during {during}, after {after}");
}
