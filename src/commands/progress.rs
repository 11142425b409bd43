//! The progress of a long command on stderr, until dropped: a spinner with a message on
//! a terminal, a line every 30 s otherwise (a Slurm log, a CI), so a run of minutes is
//! never silent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts reporting `message(seconds since the start)` every 200 ms (terminal) or
    /// 30 s (otherwise).
    pub fn start(message: impl Fn(f64) -> String + Send + 'static) -> Progress {
        use std::io::IsTerminal;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let tty = std::io::stderr().is_terminal();
        let thread = std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            let bar = if tty {
                indicatif::ProgressBar::new_spinner()
            } else {
                indicatif::ProgressBar::hidden()
            };
            let mut last_line = t0;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(200));
                let msg = message(t0.elapsed().as_secs_f64());
                if tty {
                    bar.set_message(msg);
                    bar.tick();
                } else if last_line.elapsed().as_secs() >= 30 {
                    eprintln!("{msg}");
                    last_line = std::time::Instant::now();
                }
            }
            bar.finish_and_clear();
        });
        Progress {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
