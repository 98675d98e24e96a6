// Test-only preload (`node --import`): makes this process's Baileys trust the loopback fake's certificate root
// (hex in WA_FAKE_ROOT), the equivalent of installing a test CA. Never part of the package.
import { WA_CERT_DETAILS } from 'baileys';

if (process.env.WA_FAKE_ROOT) WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(process.env.WA_FAKE_ROOT, 'hex');
