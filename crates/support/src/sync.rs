//! Single-threaded async primitives (the core runs on one thread, like a JS runtime):
//! a cancellation token, a FIFO counting semaphore, the Python SDK's byte budget, a
//! one-shot event and a single-flight async initialiser. No busy waiting: every wait
//! parks a waker and is woken by the state change it waits for.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use std::future::poll_fn;

// ---------------------------------------------------------------------------------
// Joining

/// Runs `futs` concurrently and gives their outputs in order. (futures_util's
/// `join_all` without its `FuturesOrdered` machinery, which cost the wasm module
/// kilobytes: the SDK joins a handful of futures at a time, so polling each pending one
/// on every wake is cheap.)
pub async fn join_all<F: Future>(futs: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futs: Vec<Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut outs: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (f, out) in futs.iter_mut().zip(outs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            return Poll::Pending;
        }
        Poll::Ready(outs.iter_mut().filter_map(Option::take).collect())
    })
    .await
}

/// Like [`join_all`] for fallible futures: the outputs in order, or the first error
/// (the others are dropped then).
pub async fn try_join_all<T, E, F>(futs: impl IntoIterator<Item = F>) -> Result<Vec<T>, E>
where
    F: Future<Output = Result<T, E>>,
{
    let mut futs: Vec<Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut outs: Vec<Option<T>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (f, out) in futs.iter_mut().zip(outs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(Ok(v)) => *out = Some(v),
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            return Poll::Pending;
        }
        Poll::Ready(Ok(outs.iter_mut().filter_map(Option::take).collect()))
    })
    .await
}

// ---------------------------------------------------------------------------------
// Cancellation

#[derive(Default)]
struct CancelInner {
    cancelled: bool,
    wakers: Vec<Waker>,
}

/// A cancellation flag shared between an operation and whoever may abort it.
#[derive(Clone, Default)]
pub struct CancelToken(Rc<RefCell<CancelInner>>);

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CancelToken({})", self.is_cancelled())
    }
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }
    /// Cancels; wakes every waiter. Idempotent.
    pub fn cancel(&self) {
        let wakers = {
            let mut i = self.0.borrow_mut();
            if i.cancelled {
                return;
            }
            i.cancelled = true;
            std::mem::take(&mut i.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
    /// Whether `cancel` was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.borrow().cancelled
    }
    /// Resolves once cancelled.
    pub fn cancelled(&self) -> impl Future<Output = ()> + 'static {
        let me = self.clone();
        poll_fn(move |cx| {
            let mut i = me.0.borrow_mut();
            if i.cancelled {
                Poll::Ready(())
            } else {
                if !i.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    i.wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
    }
}

/// `fut`'s output, or `None` when `token` is cancelled first (`fut` is then dropped,
/// which cancels what it was doing, e.g. aborts its request).
pub async fn unless_cancelled<F: Future>(fut: F, token: &CancelToken) -> Option<F::Output> {
    let c = token.cancelled();
    futures_util::pin_mut!(fut, c);
    match futures_util::future::select(fut, c).await {
        futures_util::future::Either::Left((v, _)) => Some(v),
        futures_util::future::Either::Right(_) => None,
    }
}

// ---------------------------------------------------------------------------------
// One-shot event

#[derive(Default)]
struct EventInner {
    set: bool,
    wakers: Vec<Waker>,
}

/// A one-shot broadcast event: once set, every present and future wait completes.
#[derive(Clone, Default)]
pub struct Event(Rc<RefCell<EventInner>>);

impl Event {
    /// An unset event.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the event and wakes all waiters.
    pub fn set(&self) {
        let wakers = {
            let mut i = self.0.borrow_mut();
            i.set = true;
            std::mem::take(&mut i.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
    /// Whether the event is set.
    pub fn is_set(&self) -> bool {
        self.0.borrow().set
    }
    /// Resolves once the event is set.
    pub fn wait(&self) -> impl Future<Output = ()> + 'static {
        let me = self.clone();
        poll_fn(move |cx| {
            let mut i = me.0.borrow_mut();
            if i.set {
                Poll::Ready(())
            } else {
                if !i.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    i.wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
    }
}

// ---------------------------------------------------------------------------------
// Counting semaphore (FIFO)

struct SemInner {
    permits: usize,
    queue: VecDeque<(u64, Option<Waker>)>,
    next_id: u64,
}

impl SemInner {
    fn wake_front(&mut self) {
        if self.permits > 0 {
            if let Some((_, Some(w))) = self.queue.front_mut() {
                w.wake_by_ref();
            }
        }
    }
}

/// A FIFO counting semaphore. Waiters that are dropped leave the queue.
#[derive(Clone)]
pub struct Semaphore(Rc<RefCell<SemInner>>);

impl Semaphore {
    /// A semaphore with `permits` permits.
    pub fn new(permits: usize) -> Self {
        Semaphore(Rc::new(RefCell::new(SemInner {
            permits,
            queue: VecDeque::new(),
            next_id: 0,
        })))
    }
    /// Permits currently available.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.0.borrow().permits
    }
    /// Waits for a permit; it is returned when the [`Permit`] drops.
    pub fn acquire(&self) -> Acquire {
        Acquire {
            sem: self.0.clone(),
            id: None,
            done: false,
        }
    }
}

/// Future of [`Semaphore::acquire`].
pub struct Acquire {
    sem: Rc<RefCell<SemInner>>,
    id: Option<u64>,
    done: bool,
}

impl Future for Acquire {
    type Output = Permit;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Permit> {
        let this = &mut *self;
        let mut s = this.sem.borrow_mut();
        match this.id {
            None => {
                if s.permits > 0 && s.queue.is_empty() {
                    s.permits -= 1;
                    this.done = true;
                    return Poll::Ready(Permit(Some(this.sem.clone())));
                }
                let id = s.next_id;
                s.next_id += 1;
                s.queue.push_back((id, Some(cx.waker().clone())));
                this.id = Some(id);
                Poll::Pending
            }
            Some(id) => {
                if s.permits > 0 && s.queue.front().map(|e| e.0) == Some(id) {
                    s.queue.pop_front();
                    s.permits -= 1;
                    s.wake_front();
                    this.done = true;
                    return Poll::Ready(Permit(Some(this.sem.clone())));
                }
                if let Some(e) = s.queue.iter_mut().find(|e| e.0 == id) {
                    e.1 = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        if let (Some(id), false) = (self.id, self.done) {
            let mut s = self.sem.borrow_mut();
            s.queue.retain(|e| e.0 != id);
            s.wake_front();
        }
    }
}

/// A held semaphore permit (or none, for an unlimited gate).
pub struct Permit(Option<Rc<RefCell<SemInner>>>);

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(sem) = self.0.take() {
            let mut s = sem.borrow_mut();
            s.permits += 1;
            s.wake_front();
        }
    }
}

// ---------------------------------------------------------------------------------
// Byte budget

struct BytesInner {
    budget: i64,
    wakers: Vec<Waker>,
}

/// The Python SDK's `BytesSemaphore`: an acquire waits only while the remaining budget
/// is negative, then takes its bytes (so one oversized request always gets through).
#[derive(Clone)]
pub struct BytesSemaphore(Rc<RefCell<BytesInner>>);

impl BytesSemaphore {
    /// A budget of `max_bytes`.
    pub fn new(max_bytes: i64) -> Self {
        BytesSemaphore(Rc::new(RefCell::new(BytesInner {
            budget: max_bytes,
            wakers: Vec::new(),
        })))
    }
    /// Remaining budget (may be negative).
    pub fn remaining(&self) -> i64 {
        self.0.borrow().budget
    }
    /// Takes `bytes` once the budget is non-negative; returned when the guard drops.
    pub async fn acquire(&self, bytes: i64) -> BytesPermit {
        let me = self.0.clone();
        poll_fn(|cx| {
            let mut i = me.borrow_mut();
            if i.budget >= 0 {
                i.budget -= bytes;
                Poll::Ready(())
            } else {
                i.wakers.push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        BytesPermit { sem: me, bytes }
    }
}

/// Bytes held from a [`BytesSemaphore`].
pub struct BytesPermit {
    sem: Rc<RefCell<BytesInner>>,
    bytes: i64,
}

impl Drop for BytesPermit {
    fn drop(&mut self) {
        let wakers = {
            let mut i = self.sem.borrow_mut();
            i.budget += self.bytes;
            std::mem::take(&mut i.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

// ---------------------------------------------------------------------------------
// Single-flight async initialisation

enum OnceState<T> {
    Empty,
    Running(Vec<Waker>),
    Ready(T),
}

/// Lazily computes a value once, even when many callers ask concurrently: the first
/// caller runs the initialiser, the others wait for it. A failed (or abandoned)
/// initialisation leaves the cell empty, so a later call tries again.
pub struct AsyncOnce<T: Clone>(Rc<RefCell<OnceState<T>>>);

impl<T: Clone> Clone for AsyncOnce<T> {
    fn clone(&self) -> Self {
        AsyncOnce(self.0.clone())
    }
}

impl<T: Clone> Default for AsyncOnce<T> {
    fn default() -> Self {
        AsyncOnce(Rc::new(RefCell::new(OnceState::Empty)))
    }
}

struct ResetOnDrop<T: Clone>(Option<Rc<RefCell<OnceState<T>>>>);

impl<T: Clone> Drop for ResetOnDrop<T> {
    fn drop(&mut self) {
        if let Some(cell) = self.0.take() {
            let prev = std::mem::replace(&mut *cell.borrow_mut(), OnceState::Empty);
            if let OnceState::Running(wakers) = prev {
                wakers.into_iter().for_each(Waker::wake);
            }
        }
    }
}

impl<T: Clone> AsyncOnce<T> {
    /// An empty cell.
    pub fn new() -> Self {
        Self::default()
    }
    /// The value, if initialised.
    pub fn get(&self) -> Option<T> {
        match &*self.0.borrow() {
            OnceState::Ready(v) => Some(v.clone()),
            _ => None,
        }
    }
    /// Returns the value, running `init` if no one has (or is doing so).
    pub async fn get_or_try_init<E, F, Fut>(&self, init: F) -> Result<T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let run = poll_fn(|cx| {
            let mut s = self.0.borrow_mut();
            match &mut *s {
                OnceState::Ready(v) => Poll::Ready(Some(Ok(v.clone()))),
                OnceState::Running(w) => {
                    w.push(cx.waker().clone());
                    Poll::Pending
                }
                OnceState::Empty => {
                    *s = OnceState::Running(Vec::new());
                    Poll::Ready(None)
                }
            }
        })
        .await;
        match run {
            Some(ready) => ready,
            None => {
                let mut guard = ResetOnDrop(Some(self.0.clone()));
                let result = init().await;
                match result {
                    Ok(v) => {
                        guard.0 = None;
                        let prev = std::mem::replace(
                            &mut *self.0.borrow_mut(),
                            OnceState::Ready(v.clone()),
                        );
                        if let OnceState::Running(wakers) = prev {
                            wakers.into_iter().for_each(Waker::wake);
                        }
                        Ok(v)
                    }
                    Err(e) => Err(e), // the guard resets to Empty and wakes waiters
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::{join, select, Either};
    use futures_util::task::noop_waker;
    use std::cell::Cell;

    #[test]
    fn join_all_keeps_order_and_try_join_all_stops_at_the_first_error() {
        let gate = Event::new();
        let g = gate.clone();
        let dropped = Rc::new(Cell::new(0));
        struct Count(Rc<Cell<u32>>);
        impl Drop for Count {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        // The second future finishes first; the outputs keep the input order.
        let futs: Vec<Pin<Box<dyn Future<Output = u32>>>> = vec![
            Box::pin(async move {
                g.wait().await;
                1
            }),
            Box::pin(async { 2 }),
        ];
        let mut all = Box::pin(join_all(futs));
        assert!(poll_once(&mut all).is_pending());
        gate.set();
        assert_eq!(poll_once(&mut all), Poll::Ready(vec![1, 2]));
        // An error ends the join at once and drops the futures still pending.
        let d = dropped.clone();
        type Fallible<E> = Pin<Box<dyn Future<Output = Result<u32, E>>>>;
        let futs: Vec<Fallible<&str>> = vec![
            Box::pin(async move {
                let _c = Count(d);
                std::future::pending::<()>().await;
                Ok(1)
            }),
            Box::pin(async { Err("bad") }),
        ];
        let mut all = Box::pin(try_join_all(futs));
        assert_eq!(poll_once(&mut all), Poll::Ready(Err("bad")));
        drop(all);
        assert_eq!(dropped.get(), 1);
        let ok: Vec<Fallible<()>> = vec![Box::pin(async { Ok(3) }), Box::pin(async { Ok(4) })];
        assert_eq!(
            poll_once(&mut Box::pin(try_join_all(ok))),
            Poll::Ready(Ok(vec![3, 4]))
        );
    }

    fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        let w = noop_waker();
        Pin::new(f).poll(&mut Context::from_waker(&w))
    }

    #[test]
    fn semaphore_is_fifo_and_drops_leave_the_queue() {
        let s = Semaphore::new(1);
        let mut a = s.acquire();
        let pa = match poll_once(&mut a) {
            Poll::Ready(p) => p,
            _ => panic!("first acquire waits"),
        };
        let mut b = s.acquire();
        let mut c = s.acquire();
        assert!(poll_once(&mut b).is_pending());
        assert!(poll_once(&mut c).is_pending());
        drop(b); // leaves the queue
        drop(pa);
        assert!(matches!(poll_once(&mut c), Poll::Ready(_)));
        assert_eq!(s.available(), 1);
    }

    #[test]
    fn bytes_semaphore_lets_one_oversized_request_through() {
        futures_executor::block_on(async {
            let s = BytesSemaphore::new(10);
            let big = s.acquire(100).await;
            assert_eq!(s.remaining(), -90);
            let mut next = Box::pin(s.acquire(1));
            assert!(poll_once(&mut next).is_pending());
            drop(big);
            assert!(matches!(poll_once(&mut next), Poll::Ready(_)));
        });
    }

    #[test]
    fn cancel_and_event_wake_waiters() {
        futures_executor::block_on(async {
            let t = CancelToken::new();
            let e = Event::new();
            let (t2, e2) = (t.clone(), e.clone());
            let r = select(
                Box::pin(t.cancelled()),
                Box::pin(async move {
                    e2.set();
                    t2.cancel();
                    futures_util::future::pending::<()>().await
                }),
            )
            .await;
            assert!(matches!(r, Either::Left(_)));
            assert!(e.is_set());
            e.wait().await;
        });
    }

    #[test]
    fn async_once_runs_the_initialiser_once_under_concurrency() {
        futures_executor::block_on(async {
            let once: AsyncOnce<u32> = AsyncOnce::new();
            let runs = Rc::new(Cell::new(0));
            let gate = Event::new();
            let callers = (0..5).map(|_| {
                let (once, runs, gate) = (once.clone(), runs.clone(), gate.clone());
                async move {
                    once.get_or_try_init(|| async move {
                        runs.set(runs.get() + 1);
                        gate.wait().await;
                        Ok::<_, ()>(7)
                    })
                    .await
                }
            });
            let opener = async {
                gate.set();
            };
            let (results, _) = join(join_all(callers), opener).await;
            assert!(results.iter().all(|r| *r == Ok(7)));
            assert_eq!(runs.get(), 1);
        });
    }

    #[test]
    fn async_once_retries_after_failure() {
        futures_executor::block_on(async {
            let once: AsyncOnce<u32> = AsyncOnce::new();
            assert_eq!(
                once.get_or_try_init(|| async { Err::<u32, _>("boom") })
                    .await,
                Err("boom")
            );
            assert_eq!(
                once.get_or_try_init(|| async { Ok::<_, &str>(3) }).await,
                Ok(3)
            );
            assert_eq!(once.get(), Some(3));
        });
    }
}
