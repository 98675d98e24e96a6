/**
 * A code to scan, drawn in the terminal with half-height blocks (two rows a line, so it fits a normal window). The
 * text itself is printed under it too, for a terminal that cannot show the blocks or a login pasted elsewhere.
 */
import QRCode from 'qrcode';

export async function terminalQr(content: string): Promise<string> {
  const drawn = await QRCode.toString(content, { type: 'terminal', small: true, errorCorrectionLevel: 'L' });
  return `${drawn}\n${content}\n`;
}

/** A `qr` callback for a login that prints each code in turn; `done()` waits until the last one is out. */
export function qrPrinter(out: (text: string) => void): { qr: (content: string) => void; done: () => Promise<void> } {
  let printing = Promise.resolve();
  return {
    qr: (content) => {
      printing = printing.then(async () => out(await terminalQr(content))).catch(() => out(`${content}\n`));
    },
    done: () => printing,
  };
}
