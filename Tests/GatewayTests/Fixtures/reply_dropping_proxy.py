#!/usr/bin/env python3
"""A TCP proxy in front of a redis-server that loses one reply, for the tests of a store write whose
reply never arrives (the write happened; its connection died before the answer).

    reply_dropping_proxy.py --upstream-port P --control FILE --log FILE

Prints `READY <port>` once it listens on 127.0.0.1 (an ephemeral port). Everything is forwarded both
ways, until a chunk from the client holds every byte string listed in FILE (one per line, read at
each chunk; an empty or absent FILE matches nothing): that chunk is forwarded (Redis executes it),
then, after 0.3 s, both sides of that connection are closed and no byte Redis sent after it reaches
the client. It happens once; `cut <first pattern>` is appended to the log FILE.
"""
import argparse
import asyncio
import os


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    state = {"done": False}

    def patterns():
        try:
            with open(args.control, "rb") as f:
                return [line for line in f.read().split(b"\n") if line]
        except OSError:
            return []

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", args.upstream_port)
        except OSError:
            client_writer.close()
            return
        connection = {"cut": False}

        async def client_to_server():
            try:
                while True:
                    data = await client_reader.read(65536)
                    if not data:
                        break
                    wanted = patterns() if not state["done"] else []
                    if wanted and all(p in data for p in wanted):
                        state["done"] = True
                        connection["cut"] = True
                        server_writer.write(data)
                        await server_writer.drain()
                        with open(args.log, "a") as log:
                            log.write("cut " + wanted[0].decode("latin-1") + "\n")
                        await asyncio.sleep(0.3)
                        break
                    server_writer.write(data)
                    await server_writer.drain()
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                client_writer.close()
                server_writer.close()

        async def server_to_client():
            try:
                while True:
                    data = await server_reader.read(65536)
                    if not data or connection["cut"]:
                        break
                    client_writer.write(data)
                    await client_writer.drain()
            except OSError:
                pass
            finally:
                client_writer.close()
                server_writer.close()

        await asyncio.gather(client_to_server(), server_to_client())

    async def serve():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        print(f"READY {port}", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
