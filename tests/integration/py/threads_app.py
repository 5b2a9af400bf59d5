# A Python service for threads_python.sh: its main thread busy in hot_b,
# called by handle, called at module level; a Worker thread blocked on a
# lock in waiter. Prints its pid, then runs until the file named by its
# first argument exists.
import os
import sys
import threading

lock = threading.Lock()
lock.acquire()


def waiter():
    lock.acquire()


class Worker(threading.Thread):
    def run(self):
        waiter()


def hot_b(stop):
    x = 0
    while True:
        x += 1
        if x % 200000 == 0 and os.path.exists(stop):
            return x


def handle(stop):
    return hot_b(stop)


Worker(daemon=True).start()
print("pid=%d" % os.getpid(), flush=True)
handle(sys.argv[1])
