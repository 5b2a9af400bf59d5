# A Python service for python_stacks.sh: its main thread spends its CPU
# 25/75 between hot_a and hot_b, both called by handle, called by the
# module's loop; a second thread sorts with a key function, so the
# interpreter calls back into Python from C (sorted); a third blocks in
# socket.recv under recv_wait; a fourth runs an asyncio loop whose task
# spins in spin_step under spin_task between awaits. Prints its pid and
# runs until the file named by its first argument exists.
import asyncio
import os
import socket
import sys
import threading


def hot_a(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def hot_b(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def handle():
    hot_a(2500)
    hot_b(7500)


def sort_key(v):
    return -v


def sorter(stop):
    data = list(range(2000))
    while not os.path.exists(stop):
        sorted(data, key=sort_key)


def recv_wait(sock):
    return sock.recv(1)


def receiver(sock):
    recv_wait(sock)


def spin_step():
    x = 0
    for i in range(300):
        x += i
    return x


async def spin_task(stop):
    while not os.path.exists(stop):
        for _ in range(20):
            spin_step()
        await asyncio.sleep(0.002)


def spinner(stop):
    asyncio.run(spin_task(stop))


def main(stop):
    a, b = socket.socketpair()
    threading.Thread(target=sorter, args=(stop,), daemon=True).start()
    threading.Thread(target=spinner, args=(stop,), daemon=True).start()
    # Joined before the end: its wait ends in recv's return, not in the
    # process's exit.
    r = threading.Thread(target=receiver, args=(b,))
    r.start()
    print("pid=%d" % os.getpid(), flush=True)
    n = 0
    while True:
        handle()
        n += 1
        if n % 50 == 0 and os.path.exists(stop):
            a.send(b"x")
            r.join()
            return


main(sys.argv[1])
