//! The threads that run the dispatcher's database reads (the feed, the due endpoints).
//!
//! The sending thread runs in the idle scheduling class, and a thread it created would be in
//! it too, for good (leaving it takes a privilege): tokio's blocking threads, which it starts
//! when it first needs them, would be. A read starved there under a full CPU would hold a
//! pooled connection the requests share, and on SQLite a read snapshot the checkpointer waits
//! for, five times longer than at nice 19. These threads are started with the dispatcher, by
//! the thread that starts it, before the sender changes class; they run at nice 19 in the
//! normal class, and give their connection back before they answer the sender.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use storage::Failure;
use tokio::sync::oneshot;

use crate::Error;

/// How many reads may run at once: a round reads the due endpoints, then each endpoint's
/// batch (a millisecond or less each); more endpoints than this queue for a thread.
const READERS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// The reader threads: they end when this is dropped (with the dispatcher).
pub(super) struct Readers {
    jobs: Sender<Job>,
}

impl Readers {
    pub(super) fn start() -> Result<Readers, Error> {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for _ in 0..READERS {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name("webhook-reads".into())
                .spawn(move || serve(&queue))
                .map_err(|e| Error::Internal(e.to_string()))?;
        }
        Ok(Readers { jobs })
    }

    /// Runs `read` on a reader thread.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        read: impl FnOnce() -> Result<T, Failure<Error>> + Send + 'static,
    ) -> Result<T, Failure<Error>> {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = answer.send(read());
        });
        let gone = || Failure::Op(Error::Internal("the dispatcher's readers stopped".into()));
        if self.jobs.send(job).is_err() {
            return Err(gone());
        }
        answered.await.unwrap_or_else(|_| Err(gone()))
    }
}

fn serve(queue: &Mutex<Receiver<Job>>) {
    storage::lower_own_priority(storage::CHECKPOINTER_NICE);
    loop {
        // The lock is held only while waiting for a job, never while one runs.
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}
