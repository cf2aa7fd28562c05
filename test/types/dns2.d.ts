// The parts of dns2@2.1.0 the tests use (the package ships no types).
declare module 'dns2' {
  import type { Socket as UdpSocket } from 'node:dgram';
  import type { Server as TcpServer } from 'node:net';

  interface DnsQuestion {
    name: string;
    type: number;
    class: number;
  }
  interface DnsHeader {
    rcode: number;
    aa: number;
  }
  interface DnsPacket {
    header: DnsHeader;
    questions: DnsQuestion[];
    answers: Record<string, unknown>[];
  }
  type Handler = (request: DnsPacket, send: (response: DnsPacket) => void) => void;

  const dns2: {
    Packet: {
      CLASS: { IN: number };
      TYPE: Record<string, number>;
      createResponseFromRequest(request: DnsPacket): DnsPacket;
    };
    createUDPServer(handler: Handler): UdpSocket & { listen(port: number, address: string): Promise<void> };
    createTCPServer(handler: Handler): TcpServer;
  };
  export default dns2;
}
