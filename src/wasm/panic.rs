//! Panics become JS errors instead of killing the module (issue 9).
//!
//! Release wasm is built with `panic = "abort"` (stable Rust cannot unwind on wasm32), so
//! a panic ends in an `unreachable` trap. Two things make that survivable:
//!
//! * **A panic hook** (installed at module start). In a synchronous call it throws a JS
//!   `Error` named `TinkerPanicError` carrying the panic message
//!   (`wasm_bindgen::throw_str`), instead of a bare `RuntimeError: unreachable`.
//! * **Guarded promises.** Every SDK promise and background task is polled through a JS
//!   `try`/`catch` boundary ([`future_to_promise`], [`spawn_local`]). A panic while
//!   polling makes the hook record its message and return; the trap unwinds to the
//!   boundary, whose caller (a normal Rust frame) rejects the promise with a
//!   `TinkerPanicError`. Without this the promise would never settle (a hang), and the
//!   trap would escape the microtask as an uncaught exception (which ends a Node
//!   process). A background task's panic (nobody awaits it) goes to `console.error`.
//!   The panicked future is leaked, never polled or dropped again.
//!
//! What a panic still costs (documented in tests/NOTES-issue9.md): the Rust frames it
//! abandons never run their destructors, so their heap allocations leak and a
//! `RefCell` they had borrowed stays borrowed (an object whose method panicked may
//! refuse further `&mut` use or `free()` with a "recursive use" error; shared use and
//! every other object are unaffected). A synchronous panic also leaks those frames'
//! shadow-stack space (tens of bytes to a few KiB of the 1 MiB stack; a panic inside
//! a promise does not: the boundary's caller restores the stack pointer). And after a
//! synchronous panic, std considers itself still inside the hook, so a *later*
//! synchronous panic traps without the message (`RuntimeError: unreachable`); later
//! panics inside promises are still rejected, with a generic message.

use std::cell::Cell;

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::future::LocalBoxFuture;
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/wasm/js/panic.js")]
extern "C" {
    /// Calls `f`; true when it threw (a panic's trap, or anything else).
    fn poll_catching(f: &mut dyn FnMut()) -> bool;
    fn panic_error(message: &str) -> JsValue;
    /// `console.error` of a background task's panic (nobody awaits the task).
    fn report_task_panic(e: &JsValue);
}

thread_local! {
    /// How many guarded polls are on the stack.
    static IN_POLL: Cell<u32> = const { Cell::new(0) };
    /// The message of the last panic inside a guarded poll.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

const PREFIX: &str = "tinker-wasm internal error (a bug: please report it with this message)";

/// Installs the panic hook when the module is instantiated.
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        let msg = format!("{PREFIX}: {info}");
        if IN_POLL.with(Cell::get) > 0 {
            // Inside a guarded poll: let the trap reach the boundary, which rejects the
            // promise with this message. Returning keeps std's panic state consistent.
            LAST.with(|l| {
                if let Ok(mut l) = l.try_borrow_mut() {
                    *l = Some(msg);
                }
            });
            return;
        }
        wasm_bindgen::throw_val(panic_error(&msg));
    }));
}

/// A future polled inside a JS `try`/`catch`; settles `resolve`/`reject` itself.
struct Guarded {
    fut: Option<LocalBoxFuture<'static, Result<JsValue, JsValue>>>,
    settle: Option<(Function, Function)>,
}

impl Future for Guarded {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(fut) = self.fut.as_mut() else {
            return Poll::Ready(());
        };
        let mut out = None;
        IN_POLL.with(|n| n.set(n.get() + 1));
        let threw = poll_catching(&mut || out = Some(fut.as_mut().poll(cx)));
        IN_POLL.with(|n| n.set(n.get() - 1));
        let result = match out {
            Some(Poll::Pending) => return Poll::Pending,
            Some(Poll::Ready(r)) if !threw => r,
            _ => {
                // The future's state is whatever the trap left: never touch it again.
                std::mem::forget(self.fut.take());
                let msg = LAST
                    .with(|l| l.try_borrow_mut().ok().and_then(|mut l| l.take()))
                    .unwrap_or_else(|| {
                        format!("{PREFIX}: a panic while running a promise (details unavailable)")
                    });
                Err(panic_error(&msg))
            }
        };
        self.fut = None;
        match (self.settle.take(), result) {
            (Some((resolve, _)), Ok(v)) => {
                let _ = resolve.call1(&JsValue::UNDEFINED, &v);
            }
            (Some((_, reject)), Err(e)) => {
                let _ = reject.call1(&JsValue::UNDEFINED, &e);
            }
            // A background task: nobody awaits it, so say it on the console.
            (None, Err(e)) => report_task_panic(&e),
            (None, Ok(_)) => {}
        }
        Poll::Ready(())
    }
}

/// `wasm_bindgen_futures::future_to_promise`, with a panic rejecting the promise.
pub fn future_to_promise(fut: LocalBoxFuture<'static, Result<JsValue, JsValue>>) -> Promise {
    let mut fut = Some(fut);
    Promise::new(&mut |resolve, reject| {
        wasm_bindgen_futures::spawn_local(Guarded {
            fut: fut.take(),
            settle: Some((resolve, reject)),
        });
    })
}

/// `wasm_bindgen_futures::spawn_local`, with a panic ending only this task (its error goes
/// to `console.error`).
pub fn spawn_local(task: LocalBoxFuture<'static, ()>) {
    wasm_bindgen_futures::spawn_local(Guarded {
        fut: Some(Box::pin(async move {
            task.await;
            Ok(JsValue::UNDEFINED)
        })),
        settle: None,
    });
}

/// **Test-only** (hidden from the types): panics on purpose, to prove a panic leaves the
/// module usable. `"sync"` panics in this call; `"async"` returns a promise whose task
/// panics after yielding once; `"task"` panics in a background task.
#[wasm_bindgen(js_name = __testPanic, skip_typescript)]
pub fn test_panic(kind: &str) -> JsValue {
    match kind {
        "async" => future_to_promise(Box::pin(async {
            gloo_timers::future::TimeoutFuture::new(0).await;
            panic!("poisoned input (async, on purpose)");
        }))
        .into(),
        "task" => {
            spawn_local(Box::pin(async {
                gloo_timers::future::TimeoutFuture::new(0).await;
                panic!("poisoned input (background task, on purpose)");
            }));
            JsValue::UNDEFINED
        }
        _ => panic!("poisoned input (sync, on purpose)"),
    }
}

/// **Test-only** (hidden from the types): the shadow-stack address of a local in this
/// frame, to measure what a synchronous panic leaks.
#[wasm_bindgen(js_name = __testStackAddress, skip_typescript)]
pub fn test_stack_address() -> f64 {
    let x = [0u8; 16];
    std::hint::black_box(&x).as_ptr() as usize as f64
}
