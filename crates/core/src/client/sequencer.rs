//! Per-model request ordering. The server executes a model's requests in `seq_id`
//! order and waits for a missing id, so a client must submit them in order without
//! gaps. As in the Python SDK, each call takes a *turn* in call order (synchronously,
//! when the method is called) and submits only when every earlier call has submitted;
//! results are then awaited independently, so `forward_backward` + `optim_step` called
//! back to back pipeline into one server step.
//!
//! One difference makes cancellation safe: seq ids are assigned when the turn comes,
//! not at call time. A call abandoned while waiting for its turn (an aborted signal, a
//! timeout) then simply gives its turn away and consumes no id, so no gap is left.
//! When nothing is abandoned the ids are exactly the Python SDK's.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::error::{Error, Result};
use crate::map::SortedSet;

#[derive(Default)]
struct Inner {
    next_ticket: u64,
    serving: u64,
    next_seq: i64,
    abandoned: SortedSet<u64>,
    /// The waker of each ticket waiting for its turn.
    waiters: Vec<(u64, Waker)>,
    poisoned: Option<String>,
}

impl Inner {
    fn advance(&mut self) {
        self.serving += 1;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
        if let Some(w) = self.remove_waiter(self.serving) {
            w.wake();
        }
    }
    fn remove_waiter(&mut self, id: u64) -> Option<Waker> {
        let i = self.waiters.iter().position(|(t, _)| *t == id)?;
        Some(self.waiters.swap_remove(i).1)
    }
    fn wake_all(&mut self) {
        for (_, w) in self.waiters.drain(..) {
            w.wake();
        }
    }
}

/// The ordering state of one training model.
#[derive(Clone)]
pub struct Sequencer(Rc<RefCell<Inner>>);

/// A place in the order, taken at call time.
pub struct Ticket {
    seq: Rc<RefCell<Inner>>,
    id: u64,
    done: bool,
}

/// The right to submit now; the next ticket is served when this drops.
pub struct Turn {
    seq: Rc<RefCell<Inner>>,
}

impl Sequencer {
    /// A sequencer whose first request gets `first_seq_id` (1 after `create_model`).
    pub fn new(first_seq_id: i64) -> Self {
        Sequencer(Rc::new(RefCell::new(Inner {
            next_seq: first_seq_id,
            ..Default::default()
        })))
    }

    /// Takes the next place in the order.
    pub fn ticket(&self) -> Ticket {
        let mut i = self.0.borrow_mut();
        let id = i.next_ticket;
        i.next_ticket += 1;
        Ticket {
            seq: self.0.clone(),
            id,
            done: false,
        }
    }

    /// The seq id the next submission will get.
    pub fn next_seq_id(&self) -> i64 {
        self.0.borrow().next_seq
    }

    /// Fails every waiting and later request (e.g. after a failed custom loss, whose
    /// reserved ids can no longer be filled).
    pub fn poison(&self, why: &str) {
        let mut i = self.0.borrow_mut();
        if i.poisoned.is_none() {
            i.poisoned = Some(why.to_string());
        }
        i.wake_all();
    }

    /// Whether the sequencer is poisoned.
    pub fn poisoned(&self) -> Option<String> {
        self.0.borrow().poisoned.clone()
    }
}

fn poisoned_error(why: &str) -> Error {
    Error::Closed { message: format!("A previous request failed; this TrainingClient is poisoned and cannot accept further requests ({why})") }
}

impl Ticket {
    /// Waits for this ticket's turn.
    pub fn wait(mut self) -> impl Future<Output = Result<Turn>> {
        std::future::poll_fn(move |cx: &mut Context<'_>| {
            let mut i = self.seq.borrow_mut();
            if let Some(why) = &i.poisoned {
                let e = poisoned_error(why);
                drop(i);
                self.release();
                return Poll::Ready(Err(e));
            }
            if i.serving == self.id {
                drop(i);
                self.done = true;
                return Poll::Ready(Ok(Turn {
                    seq: self.seq.clone(),
                }));
            }
            let waker = cx.waker().clone();
            match i.waiters.iter_mut().find(|(t, _)| *t == self.id) {
                Some(slot) => slot.1 = waker,
                None => i.waiters.push((self.id, waker)),
            }
            Poll::Pending
        })
    }

    fn release(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let mut i = self.seq.borrow_mut();
        i.remove_waiter(self.id);
        if i.serving == self.id {
            i.advance();
        } else if self.id > i.serving {
            i.abandoned.insert(self.id);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.release();
    }
}

impl Turn {
    /// Reserves `n` consecutive seq ids; returns the first.
    pub fn reserve(&self, n: usize) -> i64 {
        let mut i = self.seq.borrow_mut();
        let first = i.next_seq;
        i.next_seq += n as i64;
        first
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.seq.borrow_mut().advance();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::task::noop_waker;
    use std::pin::Pin;

    fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        let w = noop_waker();
        Pin::new(f).poll(&mut Context::from_waker(&w))
    }

    #[test]
    fn turns_follow_ticket_order_and_ids_are_assigned_in_turn() {
        let s = Sequencer::new(1);
        let (a, b, c) = (s.ticket(), s.ticket(), s.ticket());
        let mut fc = Box::pin(c.wait());
        let mut fb = Box::pin(b.wait());
        assert!(poll(&mut fc).is_pending());
        assert!(poll(&mut fb).is_pending());
        let ta = match poll(&mut Box::pin(a.wait())) {
            Poll::Ready(Ok(t)) => t,
            _ => panic!("first ticket is served at once"),
        };
        assert_eq!(
            ta.reserve(3),
            1,
            "a forward_backward of 3 chunks takes 1..=3"
        );
        assert!(
            poll(&mut fb).is_pending(),
            "b waits until a's submission is done"
        );
        drop(ta);
        let tb = match poll(&mut fb) {
            Poll::Ready(Ok(t)) => t,
            _ => panic!("b's turn"),
        };
        assert_eq!(tb.reserve(1), 4);
        drop(tb);
        let tc = match poll(&mut fc) {
            Poll::Ready(Ok(t)) => t,
            _ => panic!("c's turn"),
        };
        assert_eq!(tc.reserve(1), 5);
    }

    #[test]
    fn abandoned_tickets_leave_no_gap() {
        let s = Sequencer::new(1);
        let (a, b, c) = (s.ticket(), s.ticket(), s.ticket());
        let ta = match poll(&mut Box::pin(a.wait())) {
            Poll::Ready(Ok(t)) => t,
            _ => panic!(),
        };
        drop(b); // aborted before its turn
        let mut fc = Box::pin(c.wait());
        assert!(poll(&mut fc).is_pending());
        assert_eq!(ta.reserve(1), 1);
        drop(ta);
        match poll(&mut fc) {
            Poll::Ready(Ok(t)) => assert_eq!(t.reserve(1), 2, "b consumed no id"),
            _ => panic!("c is served after a"),
        }
        // A ticket dropped while being served passes the turn on.
        let (d, e) = (s.ticket(), s.ticket());
        drop(d);
        assert!(matches!(poll(&mut Box::pin(e.wait())), Poll::Ready(Ok(_))));
    }

    #[test]
    fn poison_fails_waiters_and_later_calls() {
        let s = Sequencer::new(1);
        let (a, b) = (s.ticket(), s.ticket());
        let _ta = match poll(&mut Box::pin(a.wait())) {
            Poll::Ready(Ok(t)) => t,
            _ => panic!(),
        };
        let mut fb = Box::pin(b.wait());
        assert!(poll(&mut fb).is_pending());
        s.poison("custom loss failed");
        assert!(matches!(
            poll(&mut fb),
            Poll::Ready(Err(Error::Closed { .. }))
        ));
        assert!(matches!(
            poll(&mut Box::pin(s.ticket().wait())),
            Poll::Ready(Err(_))
        ));
    }
}
