#!/usr/bin/env node
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2));
// A failed command has printed its one line; nothing it left behind (a timer, a socket) may keep it alive.
if (code !== 0) process.exit(code);
process.exitCode = code;
