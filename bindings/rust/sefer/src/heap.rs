// SPDX-License-Identifier: MIT
//! First-class heaps: `sefer_heap_new` and friends (sefer's Documentation/heaps.rst).

use std::alloc::{GlobalAlloc, Layout};
use std::any::Any;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;

use crate::{free_sized, global_alloc, sys, Calls, MIN_ALIGN};

/// A first-class sefer heap: blocks allocated from it are freed all at once when it is
/// dropped (`sefer_heap_destroy`: pages and segments go back in bulk, no walk over blocks).
///
/// # Thread ownership
///
/// A heap belongs to the thread that made it: only that thread allocates from it, resizes
/// into it, walks it, collects it and destroys it. `Heap` is neither `Send` nor `Sync`, so the
/// compiler keeps it on its thread (sefer itself would refuse another thread's call, report it
/// as a misuse and return null):
///
/// ```compile_fail
/// fn on_another_thread<T: Send + 'static>(t: T) {
///     std::thread::spawn(move || drop(t));
/// }
/// on_another_thread(sefer::Heap::new().unwrap()); // error: `*mut ()` cannot be sent
/// ```
///
/// Its *blocks* are not tied to the thread: a pointer may go to
/// any thread, which may read, write and free it (with [`Heap::dealloc`]'s twin, the
/// [`Sefer`](crate::Sefer) allocator, or `sefer_free`), until the heap is dropped.
///
/// # Lifetime of the blocks
///
/// Dropping the heap frees every block still in it. The blocks are raw pointers, so the
/// compiler does not stop their use after the drop: that is the caller's contract, as with any
/// raw allocation. A block freed before the drop is simply gone; one freed after it is a
/// double free.
///
/// `Heap` also implements [`GlobalAlloc`] (same rules as [`Sefer`](crate::Sefer)'s, from this
/// heap), so code generic over an allocator can use it; it cannot be a `#[global_allocator]`,
/// which must be `Sync`. (The `allocator_api2` crate's `Allocator` trait is not implemented:
/// the crate is not in the Debian archive this build uses.)
pub struct Heap {
    raw: NonNull<sys::sefer_heap>,
    // *mut: neither Send nor Sync (the owner thread only).
    _owner_thread: PhantomData<*mut ()>,
}

impl Heap {
    /// A new heap owned by the calling thread; `None` when out of memory (or when the linked
    /// sefer was built without first-class heaps).
    pub fn new() -> Option<Heap> {
        NonNull::new(unsafe { sys::sefer_heap_new() })
            .map(|raw| Heap { raw, _owner_thread: PhantomData })
    }

    /// A block of `layout` from this heap; `None` when out of memory or when the alignment is
    /// above [`max_alignment()`](crate::max_alignment). A zero-size layout gets a real block.
    pub fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        NonNull::new(unsafe { GlobalAlloc::alloc(self, layout) })
    }

    /// Like [`alloc`](Heap::alloc), with every byte of the block's `layout.size()` zero.
    pub fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        NonNull::new(unsafe { GlobalAlloc::alloc_zeroed(self, layout) })
    }

    /// Resizes `ptr` to `new_size` bytes at `layout.align()`: the result (`ptr` itself when
    /// the new size fits and uses at least half of the block) is a block of this heap holding
    /// the first `min(layout.size(), new_size)` bytes of `ptr`. On `None` the old block is
    /// untouched.
    ///
    /// # Safety
    /// `ptr` is a live block allocated with `layout` by this heap; `new_size` rounded up to
    /// the alignment does not overflow `isize`.
    pub unsafe fn realloc(
        &self,
        ptr: NonNull<u8>,
        layout: Layout,
        new_size: usize,
    ) -> Option<NonNull<u8>> {
        NonNull::new(GlobalAlloc::realloc(self, ptr.as_ptr(), layout, new_size))
    }

    /// Frees `ptr` now (its memory goes back to this heap's pages).
    ///
    /// # Safety
    /// `ptr` is a live block allocated with `layout` by this heap.
    pub unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        free_sized(ptr.as_ptr(), layout)
    }

    /// Collects frees other threads made of this heap's blocks, releases empty pages, and with
    /// `force` purges them now.
    pub fn collect(&self, force: bool) {
        unsafe { sys::sefer_heap_collect(self.raw.as_ptr(), force) }
    }

    /// Calls `f(block, usable size)` once for every live block of the heap (after collecting
    /// the frees other threads completed before the call), until `f` returns false. Returns
    /// false if `f` stopped the walk, true if every block was seen. `&mut self`: `f` cannot
    /// allocate from the heap meanwhile. A panic in `f` stops the walk and resumes after it.
    pub fn for_each_block<F: FnMut(NonNull<u8>, usize) -> bool>(&mut self, f: F) -> bool {
        struct Walk<F> {
            f: F,
            panic: Option<Box<dyn Any + Send>>,
        }
        unsafe extern "C" fn visit<F: FnMut(NonNull<u8>, usize) -> bool>(
            block: *mut c_void,
            usable: usize,
            arg: *mut c_void,
        ) -> bool {
            let walk = &mut *(arg as *mut Walk<F>);
            let block = NonNull::new_unchecked(block as *mut u8);
            match panic::catch_unwind(AssertUnwindSafe(|| (walk.f)(block, usable))) {
                Ok(go_on) => go_on,
                Err(e) => {
                    walk.panic = Some(e);
                    false
                }
            }
        }
        let mut walk = Walk { f, panic: None };
        let all = unsafe {
            sys::sefer_heap_visit(
                self.raw.as_ptr(),
                visit::<F>,
                &mut walk as *mut Walk<F> as *mut c_void,
            )
        };
        if let Some(e) = walk.panic {
            panic::resume_unwind(e);
        }
        all
    }

    /// The C heap, for calls of [`sefer_sys`]. It stays owned by this `Heap`.
    pub fn as_raw(&self) -> *mut sys::sefer_heap {
        self.raw.as_ptr()
    }
}

impl Drop for Heap {
    /// `sefer_heap_destroy`: every block still in the heap is freed.
    fn drop(&mut self) {
        unsafe { sys::sefer_heap_destroy(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Heap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Heap").field(&self.raw).finish()
    }
}

impl Calls for Heap {
    #[inline]
    unsafe fn c_malloc(&self, size: usize) -> *mut c_void {
        sys::sefer_heap_malloc(self.raw.as_ptr(), size)
    }
    #[inline]
    unsafe fn c_aligned(&self, align: usize, size: usize) -> *mut c_void {
        sys::sefer_heap_aligned_alloc(self.raw.as_ptr(), align, size)
    }
    #[inline]
    unsafe fn c_calloc(&self, size: usize) -> *mut c_void {
        sys::sefer_heap_calloc(self.raw.as_ptr(), 1, size)
    }
    #[inline]
    unsafe fn c_realloc(&self, p: *mut c_void, size: usize) -> *mut c_void {
        sys::sefer_heap_realloc(self.raw.as_ptr(), p, size)
    }
}
global_alloc!(Heap);
