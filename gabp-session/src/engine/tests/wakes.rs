//! Frames queued from other threads while the engine idles: each wakes the engine, and none is left unwritten.

use super::*;

/// Waits a few microseconds now and then, so that the engine goes idle between frames.
fn pause(n: usize) {
    if n % 3 == 0 {
        std::thread::sleep(Duration::from_micros(20 + (n % 7) as u64 * 10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_and_calls_queued_from_other_threads_while_the_engine_idles_are_all_written() {
    const EVENTS: u64 = 2_000;
    const CALLS: usize = 500;
    let mut h = start();
    let publish = h.publish.clone();
    let publisher = std::thread::spawn(move || {
        let channel = gabp_types::ChannelName::new("world/tick").unwrap();
        for seq in 0..EVENTS {
            let event = Event::new(channel.clone(), seq, Value::Null);
            let mut body = Bytes::from(Message::Event(event).to_vec());
            loop {
                match publish.try_send(body) {
                    Ok(()) => break,
                    Err(TrySendError::Full(back)) => {
                        body = back;
                        std::thread::yield_now();
                    }
                    Err(TrySendError::Closed(_)) => panic!("the engine ended"),
                }
            }
            pause(seq as usize);
        }
    });
    let outgoing = h.outgoing.clone();
    let caller = std::thread::spawn(move || {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let mut replies = Vec::new();
        for n in 0..CALLS {
            let request = Request::new(MethodName::new("game/call").unwrap(), None);
            let (reply, rx) = oneshot::channel();
            let call = Outgoing::Call {
                id: request.id,
                body: Bytes::from(Message::Request(request).to_vec()),
                reply,
                deadline,
            };
            futures::executor::block_on(outgoing.send(call)).unwrap();
            replies.push(rx);
            pause(n);
        }
        replies
    });
    let (mut seq, mut calls) = (0, 0);
    let read = tokio::time::timeout(Duration::from_secs(60), async {
        while seq < EVENTS || calls < CALLS {
            match next_message(&mut h.peer).await {
                Message::Event(event) => {
                    assert_eq!(event.seq, seq, "events in order, none lost");
                    seq += 1;
                }
                Message::Request(request) => {
                    calls += 1;
                    answer(&mut h.peer, request.id, Value::from(calls)).await;
                }
                Message::Response(_) => panic!("nothing was asked"),
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "left unwritten: {} events of {EVENTS}, {} calls of {CALLS}",
        EVENTS - seq,
        CALLS - calls
    );
    publisher.join().unwrap();
    for rx in caller.join().unwrap() {
        let delivered = tokio::time::timeout(Duration::from_secs(10), rx).await;
        assert!(matches!(delivered, Ok(Ok(Delivery::Answered(Ok(_))))));
    }
}
