// Writing to a socket with backpressure: the protocol servers (IMAP, POP3) await each write, so a client
// that reads slowly (a large FETCH or RETR) holds its session, not the process's memory.
import type { Socket } from 'node:net';

/** Resolves at once when the socket took the data, else when it drains or closes (never rejects). */
export function writeDrained(socket: Socket, data: string | Buffer): Promise<void> {
  if (socket.destroyed || socket.write(data)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}
