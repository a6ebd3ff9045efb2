// SPDX-License-Identifier: MIT
//! Raw FFI to sefer, a memory allocator written in C.
//!
//! Every function here is sefer's C API (`sefer.h`) as is: the same names, arguments and
//! contracts, all `unsafe`. The safe face, with `GlobalAlloc` and first-class heaps, is the
//! `sefer` crate.
//!
//! By default the crate compiles sefer itself (its amalgamation, configured like
//! `configs/vendor_defconfig`: the `sefer_*` API only, so the process's `malloc` stays the C
//! library's; C11 atomics for the segment registry, so nothing to link but pthreads). With the
//! feature `system` it links an installed `libsefer` found by pkg-config instead.
#![allow(non_camel_case_types)]
#![deny(missing_docs)]

use std::os::raw::{c_char, c_void};

/// The statistics of `sefer_stats_get` (`struct sefer_stats` in `sefer.h`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct sefer_stats {
    /// Allocations of every kind (0 unless sefer was built with CONFIG_STATS_CALLS).
    pub mallocs: u64,
    /// Frees, local and cross-thread (likewise).
    pub frees: u64,
    /// Frees of a block owned by another (or no) thread.
    pub xthread_frees: u64,
    /// Allocations served by a dedicated segment.
    pub large_allocs: u64,
    /// Segments mapped now.
    pub segments: u64,
    /// Most segments mapped at once.
    pub segments_peak: u64,
    /// Segments mapped since start (each one an OS call).
    pub segments_mapped: u64,
    /// Bytes of segment memory mapped and not purged, now.
    pub committed: u64,
    /// Peak of `committed`.
    pub committed_peak: u64,
    /// Bytes handed back to the OS while staying mapped.
    pub purged: u64,
    /// Segments left by exited threads, still live.
    pub abandoned: u64,
    /// Abandoned segments adopted by another thread.
    pub reclaimed: u64,
    /// Heaps created (thread and first-class heaps' structures mapped).
    pub threads: u64,
    /// First-class heaps alive now.
    pub heaps: u64,
    /// Usable bytes of the blocks allocated now (small and large), counted at the query.
    pub in_use_bytes: u64,
    /// Blocks allocated now.
    pub in_use_blocks: u64,
    /// The highest `in_use_bytes` seen at a sample (sefer(3) says when samples are taken).
    pub in_use_peak_bytes: u64,
    /// The highest `in_use_blocks` seen at a sample.
    pub in_use_peak_blocks: u64,
    /// Large blocks allocated now (part of `in_use_blocks`).
    pub large_blocks: u64,
    /// Their usable bytes (part of `in_use_bytes`).
    pub large_bytes: u64,
    /// Bytes of the small-block segments mapped now.
    pub small_bytes: u64,
    /// Times a purge delay was raised (purged memory needed again soon).
    pub purge_raises: u64,
    /// Spinlock waiters that gave their CPU away.
    pub lock_yields: u64,
    /// Exits of a last worker that kept what exited threads left for the next threads.
    pub handoffs_kept: u64,
    /// Exited threads' heaps kept whole for the next threads, now.
    pub heaps_parked: u64,
    /// Parked heaps that a new thread took over.
    pub heaps_adopted: u64,
    /// Parked heaps that a running thread took for its own, parking its heap in their place,
    /// rather than map fresh memory; only from a heap it had taken over itself.
    pub heaps_switched: u64,
}

/// `sefer_stats_print` flag: add the per-size-class table.
pub const SEFER_STATS_CLASSES: u32 = 1;
/// `sefer_stats_print` flag: one JSON object instead of the table.
pub const SEFER_STATS_JSON: u32 = 2;

/// A first-class heap (`struct sefer_heap`), opaque.
#[repr(C)]
pub struct sefer_heap {
    _opaque: [u8; 0],
}

/// The callback of [`sefer_heap_visit`]: block, usable size, argument; false stops the walk.
pub type sefer_visit_fn =
    unsafe extern "C" fn(block: *mut c_void, usable: usize, arg: *mut c_void) -> bool;

extern "C" {
    /// `malloc`: a block of at least `size` bytes, 16-byte aligned; NULL when out of memory.
    pub fn sefer_malloc(size: usize) -> *mut c_void;
    /// `free`: NULL is ignored; a double or invalid free is reported and aborts.
    pub fn sefer_free(p: *mut c_void);
    /// C23 `free_sized`: `size` as passed to the call that allocated `p`.
    pub fn sefer_free_sized(p: *mut c_void, size: usize);
    /// C23 `free_aligned_sized`: alignment and size as passed to the allocating call.
    pub fn sefer_free_aligned_sized(p: *mut c_void, alignment: usize, size: usize);
    /// `calloc`: `n * size` zero bytes; NULL on overflow or out of memory.
    pub fn sefer_calloc(n: usize, size: usize) -> *mut c_void;
    /// `realloc`, glibc's way: `size` 0 frees `p` and returns NULL.
    pub fn sefer_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    /// `reallocarray`: `realloc(p, n * size)` with an overflow check.
    pub fn sefer_reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void;
    /// `aligned_alloc`: any power-of-two `alignment` up to [`sefer_max_alignment`].
    pub fn sefer_aligned_alloc(alignment: usize, size: usize) -> *mut c_void;
    /// `posix_memalign`: 0, EINVAL or ENOMEM.
    pub fn sefer_posix_memalign(out: *mut *mut c_void, alignment: usize, size: usize) -> i32;
    /// `memalign`.
    pub fn sefer_memalign(alignment: usize, size: usize) -> *mut c_void;
    /// `valloc`.
    pub fn sefer_valloc(size: usize) -> *mut c_void;
    /// `pvalloc`.
    pub fn sefer_pvalloc(size: usize) -> *mut c_void;
    /// Bytes usable in the block `p` (at least what was asked); 0 for NULL.
    pub fn sefer_usable_size(p: *const c_void) -> usize;
    /// The largest alignment the aligned calls accept.
    pub fn sefer_max_alignment() -> usize;
    /// Whether `p` lies in memory sefer manages (any pointer value is safe to ask about).
    pub fn sefer_owns(p: *const c_void) -> bool;
    /// Fills the first `size` bytes of `*st` with the process-wide figures (the fields both
    /// sides know, zeros past them); returns how many bytes it filled.
    pub fn sefer_stats_get(st: *mut sefer_stats, size: usize) -> usize;
    /// Prints the stats: `fp` NULL writes to stderr without allocating; `flags` are
    /// `SEFER_STATS_*`.
    pub fn sefer_stats_print(fp: *mut c_void, flags: u32);
    /// Returns the calling thread's free memory to the OS (`force`: everything pending now).
    pub fn sefer_collect(force: bool);
    /// Tears down the calling thread's heap now, as at thread exit.
    pub fn sefer_thread_done();
    /// Checks the allocator's invariants; the number of problems found (0: sound).
    pub fn sefer_check_heap() -> usize;
    /// A new first-class heap, owned by the calling thread; NULL when out of memory.
    pub fn sefer_heap_new() -> *mut sefer_heap;
    /// Frees every block of `h` at once; `h` is gone.
    pub fn sefer_heap_destroy(h: *mut sefer_heap);
    /// `malloc` from `h` (owner thread only).
    pub fn sefer_heap_malloc(h: *mut sefer_heap, size: usize) -> *mut c_void;
    /// `calloc` from `h` (owner thread only).
    pub fn sefer_heap_calloc(h: *mut sefer_heap, n: usize, size: usize) -> *mut c_void;
    /// `realloc` into `h` (owner thread only): the result is always a block of `h`.
    pub fn sefer_heap_realloc(h: *mut sefer_heap, p: *mut c_void, size: usize) -> *mut c_void;
    /// `aligned_alloc` from `h` (owner thread only).
    pub fn sefer_heap_aligned_alloc(h: *mut sefer_heap, align: usize, size: usize) -> *mut c_void;
    /// Calls `f(block, usable, arg)` for every live block of `h`; false if `f` stopped it.
    pub fn sefer_heap_visit(h: *mut sefer_heap, f: sefer_visit_fn, arg: *mut c_void) -> bool;
    /// [`sefer_collect`] for `h`.
    pub fn sefer_heap_collect(h: *mut sefer_heap, force: bool);
    /// "sefer MAJOR.MINOR.PATCH" of the library in use, NUL-terminated, static.
    pub fn sefer_version() -> *const c_char;
}
