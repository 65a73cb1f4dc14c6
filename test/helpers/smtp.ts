import { SMTPServer } from "smtp-server";

// A real SMTP server on loopback that keeps every mail it is sent, for alert e-mail tests.

export interface CaughtMail {
  /** The envelope's recipients, comma-joined. */
  to: string;
  /** The message as sent, quoted-printable soft breaks joined and escapes decoded. */
  text: string;
}

export interface MailCatcher {
  url: string;
  mails: CaughtMail[];
  close(): Promise<void>;
}

export async function startMailCatcher(): Promise<MailCatcher> {
  const mails: CaughtMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, cb) {
      let raw = "";
      stream.on("data", (c: Buffer) => (raw += c.toString("utf8")));
      stream.on("end", () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address).join(","), text: decodeMail(raw) });
        cb();
      });
    },
  });
  await new Promise<void>((r) => smtp.listen(0, "127.0.0.1", () => r()));
  const port = (smtp.server.address() as { port: number }).port;
  return { url: `smtp://127.0.0.1:${port}`, mails, close: () => new Promise<void>((r) => smtp.close(() => r())) };
}

function decodeMail(raw: string): string {
  const unfolded = raw.replace(/=\r?\n/g, "");
  return Buffer.from(
    unfolded.replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
    "latin1",
  ).toString("utf8");
}
