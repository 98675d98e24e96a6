/**
 * matrix-js-sdk logs every sync step to the console through one process-wide logger (loglevel). Its lines go to our
 * log at debug level instead, so they show with verbose logging only. Route before the SDK itself is imported:
 * some of its modules bind the logger's methods when they load.
 */
import { format } from 'node:util';
import { type Logger, silentLogger } from '../../util/log.js';

type SdkLogger = typeof import('matrix-js-sdk/lib/logger.js').logger;

interface LoglevelLogger {
  methodFactory: (method: string, level: number, name: unknown) => (...args: unknown[]) => void;
  rebuild?: () => void;
}

let sdkLog: Logger = silentLogger;
let routed = false;

export function routeSdkLogs(logger: SdkLogger, log: Logger): void {
  sdkLog = log;
  if (routed) return;
  const loglevel = logger as unknown as LoglevelLogger;
  if (typeof loglevel.rebuild !== 'function') return;
  routed = true;
  loglevel.methodFactory = () =>
    function (this: { prefix?: string } | undefined, ...args: unknown[]) {
      const prefix = this?.prefix ? `${this.prefix} ` : '';
      sdkLog.debug(`matrix-js-sdk: ${prefix}${format(...args)}`);
    };
  loglevel.rebuild();
}
