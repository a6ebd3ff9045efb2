// SPDX-License-Identifier: MIT
//! sefer as Rust's allocator.
//!
//! ```no_run
//! #[global_allocator]
//! static GLOBAL: sefer::Sefer = sefer::Sefer;
//!
//! fn main() {
//!     let v: Vec<u64> = (0..1000).collect(); // allocated by sefer
//!     assert!(sefer::owns(v.as_ptr()));
//! }
//! ```
//!
//! # What the crate guarantees
//!
//! * [`Sefer`] implements [`GlobalAlloc`] completely: `alloc`, `dealloc`, `alloc_zeroed` and
//!   `realloc` honour the [`Layout`]'s alignment, for every power of two up to
//!   [`max_alignment()`] (2^46 with sefer's default configuration; a larger one gets a null
//!   pointer, which Rust reports as an allocation failure). `realloc` keeps the alignment of
//!   the layout, and moves the block when it has to.
//! * Every block is 16-byte aligned; an alignment above 16 costs at most the alignment in
//!   address space and no memory beyond the size class of the aligned size.
//! * `dealloc` passes the layout's size (and alignment) to sefer's sized frees: a sefer built
//!   with `CONFIG_HARDENED` (feature `system` with such a library) checks that they describe
//!   the block, and reports and keeps a block whose layout does not match.
//! * A zero-size layout, which `Layout` permits but `GlobalAlloc` leaves to the caller, gets a
//!   real, unique block (16 bytes, or the alignment when larger), freed like any other;
//!   `realloc` to size zero returns such a block (never frees and returns null, as C's
//!   `realloc` may).
//! * Memory errors sefer can see are reported on stderr and abort the process: a double or
//!   invalid `dealloc` ("sefer: double free of 0x... (block is already free)"). Rust's safety
//!   contract makes these undefined behaviour of the caller, so sefer adds a diagnosis, not a
//!   promise: a block freed and already reused cannot be told from a live one.
//! * The process's `malloc` is not touched: C code in the same program keeps the C library's
//!   allocator (the crate's sefer has no malloc face), and a block of one allocator must not
//!   be freed by the other.
//! * Any thread may free any block; blocks may move between threads freely.
//!
//! First-class heaps ([`Heap`]) belong to the thread that made them: see its documentation.
#![deny(missing_docs)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::CStr;
use std::os::raw::c_void;

mod heap;
pub use heap::Heap;

pub use sefer_sys as sys;

/// sefer's process statistics, as [`stats()`] returns them (`struct sefer_stats`).
pub use sefer_sys::sefer_stats as Stats;

/// The alignment of every block sefer hands out (its granule). A layout that asks for no more
/// is served by the plain `malloc` path.
pub const MIN_ALIGN: usize = 16;

/// sefer as a [`GlobalAlloc`]: install it with `#[global_allocator]`, or call it directly.
///
/// The unit struct has no state; every call goes to the calling thread's sefer heap.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sefer;

/// The C calls an allocator of this crate is made of: from the calling thread's heap
/// ([`Sefer`]) or from one first-class heap ([`Heap`]). `global_alloc!` builds the
/// `GlobalAlloc` of each from them (a macro, not a blanket impl: `GlobalAlloc` is foreign).
trait Calls {
    /// malloc: a 16-byte aligned block.
    unsafe fn c_malloc(&self, size: usize) -> *mut c_void;
    /// aligned_alloc, any power of two up to max_alignment().
    unsafe fn c_aligned(&self, align: usize, size: usize) -> *mut c_void;
    /// calloc(1, size).
    unsafe fn c_calloc(&self, size: usize) -> *mut c_void;
    /// realloc, size > 0: a 16-byte aligned result.
    unsafe fn c_realloc(&self, p: *mut c_void, size: usize) -> *mut c_void;
}

macro_rules! global_alloc {
    ($t:ty) => {
        unsafe impl GlobalAlloc for $t {
            #[inline]
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                if layout.align() <= MIN_ALIGN {
                    self.c_malloc(layout.size()) as *mut u8
                } else {
                    self.c_aligned(layout.align(), layout.size()) as *mut u8
                }
            }

            #[inline]
            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                $crate::free_sized(ptr, layout)
            }

            #[inline]
            unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
                if layout.align() <= MIN_ALIGN {
                    return self.c_calloc(layout.size()) as *mut u8;
                }
                $crate::zero(GlobalAlloc::alloc(self, layout), layout.size())
            }

            #[inline]
            unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
                if layout.align() <= MIN_ALIGN && new_size != 0 {
                    return self.c_realloc(ptr as *mut c_void, new_size) as *mut u8;
                }
                $crate::realloc_aligned(self, ptr, layout, new_size)
            }
        }
    };
}
pub(crate) use global_alloc;

impl Calls for Sefer {
    #[inline]
    unsafe fn c_malloc(&self, size: usize) -> *mut c_void {
        sys::sefer_malloc(size)
    }
    #[inline]
    unsafe fn c_aligned(&self, align: usize, size: usize) -> *mut c_void {
        sys::sefer_aligned_alloc(align, size)
    }
    #[inline]
    unsafe fn c_calloc(&self, size: usize) -> *mut c_void {
        sys::sefer_calloc(1, size)
    }
    #[inline]
    unsafe fn c_realloc(&self, p: *mut c_void, size: usize) -> *mut c_void {
        sys::sefer_realloc(p, size)
    }
}
global_alloc!(Sefer);

/// The sized free of a block allocated with `layout` (any allocator of this crate).
#[inline]
unsafe fn free_sized(ptr: *mut u8, layout: Layout) {
    if layout.align() <= MIN_ALIGN {
        sys::sefer_free_sized(ptr as *mut c_void, layout.size())
    } else {
        sys::sefer_free_aligned_sized(ptr as *mut c_void, layout.align(), layout.size())
    }
}

/// Zeroes the first `size` bytes of `p` unless it is null; returns `p`.
#[inline]
unsafe fn zero(p: *mut u8, size: usize) -> *mut u8 {
    if !p.is_null() {
        std::ptr::write_bytes(p, 0, size);
    }
    p
}

/// `realloc` where sefer's own cannot serve: an alignment above [`MIN_ALIGN`] (sefer_realloc
/// keeps only 16), or a new size of zero (sefer_realloc would free the block and return null).
/// The block stays where it is when the new size fits and uses at least half of it (the rule
/// of sefer's realloc, which a hardened sefer's sized free checks); otherwise a new block of
/// `a` gets the contents and the old one is freed.
unsafe fn realloc_aligned<A: GlobalAlloc>(
    a: &A,
    ptr: *mut u8,
    layout: Layout,
    new_size: usize,
) -> *mut u8 {
    let usable = sys::sefer_usable_size(ptr as *const c_void);
    if new_size <= usable && usable - new_size <= new_size.max(MIN_ALIGN) {
        return ptr;
    }
    let q = a.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
    if !q.is_null() {
        std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
        a.dealloc(ptr, layout);
    }
    q
}

/// Bytes usable in the block at `ptr` (at least its layout's size; what sefer's size class
/// gives); 0 for null.
///
/// # Safety
/// `ptr` is null or a live block of this crate's allocators (not freed, not a pointer into
/// the middle of a block).
pub unsafe fn usable_size(ptr: *const u8) -> usize {
    sys::sefer_usable_size(ptr as *const c_void)
}

/// Whether `ptr` lies in memory sefer manages. Any pointer value is safe to ask about: a
/// block of another allocator, a stack address, null or a dangling pointer gets `false`.
pub fn owns<T>(ptr: *const T) -> bool {
    unsafe { sys::sefer_owns(ptr as *const c_void) }
}

/// Returns the calling thread's free memory to the OS: collects frees other threads made of
/// its blocks, releases empty pages and, with `force`, purges every pending page now and gives
/// back the large blocks sefer keeps for reuse (without `force`: those that aged out).
pub fn collect(force: bool) {
    unsafe { sys::sefer_collect(force) }
}

/// The process-wide statistics (heaps of live and exited threads included).
pub fn stats() -> Stats {
    let mut st = Stats::default();
    unsafe { sys::sefer_stats_get(&mut st, core::mem::size_of::<Stats>()) };
    st
}

/// Prints sefer's statistics summary on stderr (what `SEFER_SHOW_STATS=1` prints at exit).
pub fn print_stats() {
    unsafe { sys::sefer_stats_print(core::ptr::null_mut(), 0) }
}

/// Walks every live segment and checks the allocator's invariants; returns the number of
/// problems found (each reported on stderr), 0 when the heap is sound.
pub fn check_heap() -> usize {
    unsafe { sys::sefer_check_heap() }
}

/// The largest alignment [`Sefer`] and [`Heap`] serve; a layout asking for more gets null.
pub fn max_alignment() -> usize {
    unsafe { sys::sefer_max_alignment() }
}

/// "sefer MAJOR.MINOR.PATCH" of the C library in use.
pub fn version() -> &'static str {
    unsafe { CStr::from_ptr(sys::sefer_version()) }.to_str().unwrap_or("sefer")
}
