use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Wake, Waker};

use super::*;

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A waker that raises a flag.
fn flagged() -> (Arc<Flag>, Waker) {
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    (flag.clone(), Waker::from(flag))
}

/// Sends `body`: the send must wake the engine, and the engine's next poll must read it.
fn send_wakes_and_is_read(
    tx: &FrameSender,
    queue: &mut FrameQueue,
    flag: &Flag,
    cx: &mut Context<'_>,
    body: &'static [u8],
) {
    flag.0.store(false, Ordering::SeqCst);
    assert!(tx.try_send(Bytes::from_static(body)).is_ok());
    assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
    assert_eq!(
        queue.poll_next(cx),
        Poll::Ready(Some(Bytes::from_static(body)))
    );
}

/// The bytes the queue's budget has left.
fn bytes_left(tx: &FrameSender) -> usize {
    tx.budget
        .as_ref()
        .map_or(usize::MAX, |b| b.bytes.available_permits())
}

#[test]
fn a_send_after_the_queue_went_quiet_wakes_the_engine_and_is_read() {
    let (tx, mut queue) = frame_queue(4, Some(1024));
    let (flag, waker) = flagged();
    let mut cx = Context::from_waker(&waker);
    assert!(queue.poll_next(&mut cx).is_pending());
    assert!(queue.poll_next(&mut cx).is_pending());
    send_wakes_and_is_read(&tx, &mut queue, &flag, &mut cx, b"one");
    assert!(queue.poll_next(&mut cx).is_pending());
    send_wakes_and_is_read(&tx, &mut queue, &flag, &mut cx, b"two");
}

#[tokio::test]
async fn a_quiet_poll_in_a_turn_that_spent_its_budget_still_leaves_the_engine_woken() {
    let (tx, mut queue) = frame_queue(4, Some(1024));
    let (flag, waker) = flagged();
    std::future::poll_fn(|cx| {
        // A busy turn spends the task's cooperative budget before it looks at the queue.
        super::super::tests::spend_budget(cx);
        assert!(queue
            .poll_next(&mut Context::from_waker(&waker))
            .is_pending());
        Poll::Ready(())
    })
    .await;
    assert!(tx.try_send(Bytes::from_static(b"late")).is_ok());
    // Once the turn is over: woken for another turn (tokio defers that wake to the end of the turn), or by the
    // send; never left waiting with a frame queued.
    tokio::task::yield_now().await;
    assert!(flag.0.load(Ordering::SeqCst), "the engine is woken");
}

#[test]
fn a_new_waker_is_registered_even_while_the_old_one_is() {
    let (tx, mut queue) = frame_queue(4, Some(1024));
    let (_, old_waker) = flagged();
    let (new, new_waker) = flagged();
    assert!(queue
        .poll_next(&mut Context::from_waker(&old_waker))
        .is_pending());
    assert!(queue
        .poll_next(&mut Context::from_waker(&new_waker))
        .is_pending());
    assert!(tx.try_send(Bytes::from_static(b"x")).is_ok());
    assert!(new.0.load(Ordering::SeqCst), "the current waker is woken");
}

#[test]
fn a_frame_sent_just_before_the_last_sender_went_is_taken_before_the_end() {
    let (tx, mut queue) = frame_queue(4, Some(1024));
    let (flag, waker) = flagged();
    let mut cx = Context::from_waker(&waker);
    assert!(queue.poll_next(&mut cx).is_pending());
    assert!(tx.try_send(Bytes::from_static(b"last")).is_ok());
    drop(tx);
    assert!(flag.0.load(Ordering::SeqCst));
    assert_eq!(
        queue.poll_next(&mut cx),
        Poll::Ready(Some(Bytes::from_static(b"last")))
    );
    assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
}

#[test]
fn the_last_sender_gone_wakes_the_engine_and_ends_the_queue() {
    let (tx, mut queue) = frame_queue::<Bytes>(4, Some(1024));
    let other = tx.clone();
    let (flag, waker) = flagged();
    let mut cx = Context::from_waker(&waker);
    assert!(queue.poll_next(&mut cx).is_pending());
    drop(tx);
    assert!(!flag.0.load(Ordering::SeqCst), "a sender is left");
    assert!(queue.poll_next(&mut cx).is_pending());
    drop(other);
    assert!(
        flag.0.load(Ordering::SeqCst),
        "the last one woke the engine"
    );
    assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
}

#[test]
fn a_full_queue_refuses_and_counts_nothing() {
    let (tx, mut queue) = frame_queue(1, Some(1024));
    assert!(tx.try_send(Bytes::from_static(b"a")).is_ok());
    assert!(matches!(
        tx.try_send(Bytes::from_static(b"b")),
        Err(TrySendError::Full(_))
    ));
    assert_eq!((queue.len(), bytes_left(&tx)), (1, 1023));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(queue.poll_next(&mut cx).is_ready());
    assert_eq!((queue.len(), bytes_left(&tx)), (0, 1024));
    drop(tx);
    assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
}

#[test]
fn frames_are_taken_together_up_to_the_limit_and_give_their_bytes_back() {
    let (tx, mut queue) = frame_queue(8, Some(10));
    for body in [&b"a"[..], b"bc", b"d"] {
        assert!(tx.try_send(Bytes::from_static(body)).is_ok());
    }
    let mut cx = Context::from_waker(Waker::noop());
    let mut take = |limit| match queue.poll_take(&mut cx, limit) {
        Poll::Ready(Some(taken)) => Poll::Ready(Some(taken.collect::<Vec<_>>())),
        Poll::Ready(None) => Poll::Ready(None),
        Poll::Pending => Poll::Pending,
    };
    assert_eq!(
        take(2),
        Poll::Ready(Some(vec![
            Bytes::from_static(b"a"),
            Bytes::from_static(b"bc")
        ]))
    );
    assert_eq!(bytes_left(&tx), 9);
    assert_eq!(take(8), Poll::Ready(Some(vec![Bytes::from_static(b"d")])));
    assert_eq!(bytes_left(&tx), 10);
    assert_eq!(take(8), Poll::Pending);
    drop(tx);
    assert_eq!(take(8), Poll::Ready(None));
}

#[test]
fn a_send_waits_for_room_then_wakes_the_engine() {
    let (tx, mut queue) = frame_queue(1, None);
    let (flag, waker) = flagged();
    let mut cx = Context::from_waker(&waker);
    assert!(tx.try_send(Bytes::from_static(b"a")).is_ok());
    assert!(matches!(
        tx.try_send(Bytes::from_static(b"b")),
        Err(TrySendError::Full(_))
    ));
    let mut send = std::pin::pin!(tx.send(Bytes::from_static(b"b")));
    let (sender, sender_waker) = flagged();
    let mut sender_cx = Context::from_waker(&sender_waker);
    assert!(send.as_mut().poll(&mut sender_cx).is_pending(), "full");
    assert_eq!(queue.len(), 1, "a waiting send counts nothing");
    assert_eq!(
        queue.poll_next(&mut cx),
        Poll::Ready(Some(Bytes::from_static(b"a")))
    );
    assert!(queue.poll_next(&mut cx).is_pending());
    flag.0.store(false, Ordering::SeqCst);
    assert!(sender.0.load(Ordering::SeqCst), "room woke the send");
    assert!(matches!(send.poll(&mut sender_cx), Poll::Ready(Ok(()))));
    assert!(flag.0.load(Ordering::SeqCst), "the send woke the engine");
    assert_eq!(
        queue.poll_next(&mut cx),
        Poll::Ready(Some(Bytes::from_static(b"b")))
    );
}

#[test]
fn a_closed_queue_refuses_sends_and_ends_after_what_it_holds() {
    let (tx, mut queue) = frame_queue(4, None);
    assert!(tx.try_send(Bytes::from_static(b"held")).is_ok());
    queue.close();
    assert!(matches!(
        tx.try_send(Bytes::from_static(b"late")),
        Err(TrySendError::Closed(_))
    ));
    assert!(!queue.is_empty());
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(
        queue.poll_next(&mut cx),
        Poll::Ready(Some(Bytes::from_static(b"held")))
    );
    assert!(queue.is_empty());
    assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
    let send = std::pin::pin!(tx.send(Bytes::from_static(b"later")));
    assert!(matches!(
        send.poll(&mut cx),
        Poll::Ready(Err(TrySendError::Closed(_)))
    ));
}

#[test]
fn a_send_waiting_for_room_is_refused_when_the_queue_closes() {
    let (tx, mut queue) = frame_queue(1, None);
    assert!(tx.try_send(Bytes::from_static(b"a")).is_ok());
    let mut send = std::pin::pin!(tx.send(Bytes::from_static(b"b")));
    let (sender, sender_waker) = flagged();
    let mut sender_cx = Context::from_waker(&sender_waker);
    assert!(send.as_mut().poll(&mut sender_cx).is_pending(), "full");
    queue.close();
    assert!(sender.0.load(Ordering::SeqCst), "the close woke the send");
    assert!(matches!(
        send.poll(&mut sender_cx),
        Poll::Ready(Err(TrySendError::Closed(_)))
    ));
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(
        queue.poll_next(&mut cx),
        Poll::Ready(Some(Bytes::from_static(b"a")))
    );
    assert_eq!(queue.poll_next(&mut cx), Poll::Ready(None));
}

#[test]
fn sends_waiting_for_room_each_get_it_though_frames_leave_before_they_run() {
    let (tx, mut queue) = frame_queue(2, None);
    assert!(tx.try_send(Bytes::from_static(b"a")).is_ok());
    assert!(tx.try_send(Bytes::from_static(b"b")).is_ok());
    let (first_flag, first_waker) = flagged();
    let (second_flag, second_waker) = flagged();
    let mut first = std::pin::pin!(tx.send(Bytes::from_static(b"c")));
    let mut second = std::pin::pin!(tx.send(Bytes::from_static(b"d")));
    let mut first_cx = Context::from_waker(&first_waker);
    let mut second_cx = Context::from_waker(&second_waker);
    assert!(first.as_mut().poll(&mut first_cx).is_pending());
    assert!(second.as_mut().poll(&mut second_cx).is_pending());
    // Both frames leave before either send runs.
    assert_eq!(queue.try_next(), Some(Bytes::from_static(b"a")));
    assert_eq!(queue.try_next(), Some(Bytes::from_static(b"b")));
    assert!(first_flag.0.load(Ordering::SeqCst));
    assert!(matches!(first.poll(&mut first_cx), Poll::Ready(Ok(()))));
    assert!(second_flag.0.load(Ordering::SeqCst));
    assert!(matches!(second.poll(&mut second_cx), Poll::Ready(Ok(()))));
    assert_eq!(queue.len(), 2);
}

#[test]
fn a_send_over_the_bytes_is_refused_not_held() {
    let (tx, _queue) = frame_queue(4, Some(4));
    assert!(tx.try_send(Bytes::from_static(b"abc")).is_ok());
    let send = std::pin::pin!(tx.send(Bytes::from_static(b"de")));
    assert!(matches!(
        send.poll(&mut Context::from_waker(Waker::noop())),
        Poll::Ready(Err(TrySendError::Full(_)))
    ));
    assert_eq!(bytes_left(&tx), 1, "the refused frame holds no bytes");
}

#[test]
fn bytes_bound_the_queue_but_one_frame_always_fits() {
    let (tx, mut queue) = frame_queue(8, Some(10));
    assert!(
        tx.try_send(Bytes::from(vec![b'x'; 64])).is_ok(),
        "an empty queue takes any frame"
    );
    assert!(
        tx.try_send(Bytes::from_static(b"y")).is_err(),
        "over the bytes"
    );
    assert_eq!(queue.try_next().map(|b| b.len()), Some(64));
    assert!(tx.try_send(Bytes::from_static(b"0123456789")).is_ok());
    assert!(
        tx.try_send(Bytes::from_static(b"a")).is_err(),
        "11 bytes > 10"
    );
    assert!(tx.try_send(Bytes::new()).is_ok(), "an empty frame fits");
    assert_eq!(bytes_left(&tx), 0);
    assert_eq!(queue.try_next().map(|b| b.len()), Some(10));
    assert_eq!(bytes_left(&tx), 10, "a frame taken gives its bytes back");
}

#[test]
fn a_dropped_queue_refuses_sends_and_drops_what_it_held() {
    let (tx, queue) = frame_queue::<Bytes>(1, None);
    let held = Bytes::from(vec![b'x'; 8]);
    assert!(tx.try_send(held.clone()).is_ok());
    let mut send = std::pin::pin!(tx.send(Bytes::from_static(b"waiting")));
    let (sender, sender_waker) = flagged();
    let mut sender_cx = Context::from_waker(&sender_waker);
    assert!(send.as_mut().poll(&mut sender_cx).is_pending(), "full");
    assert!(!held.is_unique(), "the queue holds the frame");
    drop(queue);
    assert!(held.is_unique(), "what the queue held is dropped with it");
    assert!(
        sender.0.load(Ordering::SeqCst),
        "the waiting send was woken"
    );
    assert!(matches!(
        send.poll(&mut sender_cx),
        Poll::Ready(Err(TrySendError::Closed(_)))
    ));
    assert!(matches!(
        tx.try_send(Bytes::from_static(b"late")),
        Err(TrySendError::Closed(_))
    ));
}

#[tokio::test]
async fn a_drained_queue_drops_what_it_held_and_refuses_sends() {
    let (tx, queue) = frame_queue::<Bytes>(2, None);
    let held = Bytes::from(vec![b'x'; 8]);
    assert!(tx.try_send(held.clone()).is_ok());
    queue.drain().await;
    assert!(held.is_unique(), "what the queue held is dropped");
    assert!(matches!(
        tx.try_send(Bytes::from_static(b"late")),
        Err(TrySendError::Closed(_))
    ));
}

#[test]
fn a_send_refused_for_bytes_after_waiting_passes_the_room_on() {
    let (tx, mut queue) = frame_queue(2, Some(10));
    assert!(tx.try_send(Bytes::from_static(b"1234")).is_ok());
    assert!(tx.try_send(Bytes::from_static(b"5678")).is_ok());
    let (big_flag, big_waker) = flagged();
    let (small_flag, small_waker) = flagged();
    let mut big = std::pin::pin!(tx.send(Bytes::from_static(b"123456789")));
    let mut small = std::pin::pin!(tx.send(Bytes::from_static(b"1")));
    let mut big_cx = Context::from_waker(&big_waker);
    let mut small_cx = Context::from_waker(&small_waker);
    assert!(big.as_mut().poll(&mut big_cx).is_pending());
    assert!(small.as_mut().poll(&mut small_cx).is_pending());
    assert_eq!(queue.try_next(), Some(Bytes::from_static(b"1234")));
    assert!(
        big_flag.0.load(Ordering::SeqCst),
        "the take told the first send"
    );
    assert!(matches!(
        big.poll(&mut big_cx),
        Poll::Ready(Err(TrySendError::Full(_)))
    ));
    assert!(
        small_flag.0.load(Ordering::SeqCst),
        "the refused send passed the room on"
    );
    assert!(matches!(small.poll(&mut small_cx), Poll::Ready(Ok(()))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_senders_on_other_threads_lose_no_frame_and_keep_their_order() {
    const SENDERS: usize = 4;
    const EACH: usize = 2_000;
    let (tx, mut queue) = frame_queue::<Bytes>(2, Some(8));
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let tx = tx.clone();
            tokio::spawn(async move {
                for n in 0..EACH {
                    let mut frame = Bytes::from(format!("{s}:{n}"));
                    // Half tried at once (and sent waiting when full), half sent waiting for room; a frame
                    // refused for the bytes is sent again.
                    loop {
                        let sent = if n % 2 == 0 {
                            match tx.try_send(frame) {
                                Err(TrySendError::Full(back)) => tx.send(back).await,
                                sent => sent,
                            }
                        } else {
                            tx.send(frame).await
                        };
                        match sent {
                            Ok(()) => break,
                            Err(TrySendError::Full(back)) => {
                                frame = back;
                                tokio::task::yield_now().await;
                            }
                            Err(TrySendError::Closed(_)) => panic!("closed"),
                        }
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let taken = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        let mut next = [0usize; SENDERS];
        while let Some(frame) = std::future::poll_fn(|cx| queue.poll_next(cx)).await {
            let text = std::str::from_utf8(&frame).unwrap();
            let (s, n) = text.split_once(':').unwrap();
            let (s, n): (usize, usize) = (s.parse().unwrap(), n.parse().unwrap());
            assert_eq!(n, next[s], "sender {s}'s frames in order");
            next[s] += 1;
        }
        next
    })
    .await
    .expect("every frame taken and the queue ended, without a lost wake");
    assert_eq!(taken, [EACH; SENDERS]);
    for sender in senders {
        sender.await.unwrap();
    }
}
