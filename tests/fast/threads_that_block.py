"""A process whose second thread blocks a given number of times (timed
waits on an event nobody sets) while its main thread waits on stdin: a
known count of voluntary context switches outside the main thread, for
tests/fast/test_bench_units.py. Prints "ready" once they are done; exits
at EOF on stdin."""
import sys
import threading


def block(times: int, ready: threading.Event, finish: threading.Event) -> None:
    never = threading.Event()
    for _ in range(times):
        never.wait(0.0002)
    ready.set()
    finish.wait(60)  # alive while counted: an ended thread's switches leave /proc with it


def main() -> None:
    ready, finish = threading.Event(), threading.Event()
    helper = threading.Thread(target=block, args=(int(sys.argv[1]), ready, finish))
    helper.start()
    ready.wait(60)
    print("ready", flush=True)
    sys.stdin.read()
    finish.set()
    helper.join(60)


if __name__ == "__main__":
    main()
