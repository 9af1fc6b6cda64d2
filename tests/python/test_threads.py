"""Long calls release the GIL: Python threads run while a simulation runs, and two simulations run
at once from two threads without deadlock, each giving the serial result."""
import sys
import threading
import time

import overlap_sim

DEFAULT = "scenarios/llama3-70b-tp8-mlp.yaml"


def test_other_threads_run_during_a_call():
    # With a switch interval of an hour, a thread holding the GIL is never preempted: the ticker can
    # run during the call only if the call itself lets go of the GIL (nb::gil_scoped_release).
    old = sys.getswitchinterval()
    state = {"in_call": False, "ticks": 0, "stop": False}
    started = threading.Event()

    def ticker():
        started.set()
        while not state["stop"]:
            if state["in_call"]:
                state["ticks"] += 1
            time.sleep(0.0001)

    t = threading.Thread(target=ticker)
    t.start()
    started.wait()
    sys.setswitchinterval(3600)
    try:
        state["in_call"] = True
        overlap_sim.run(DEFAULT)
        state["in_call"] = False
    finally:
        sys.setswitchinterval(old)
        state["stop"] = True
        t.join(60)
    assert state["ticks"] > 0


def test_two_threads_simulate_at_once():
    serial = overlap_sim.run(DEFAULT)
    results = [None, None]

    def work(i):
        results[i] = overlap_sim.run(DEFAULT)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "deadlock: a simulation thread did not finish"
    assert results[0] == serial and results[1] == serial
