/** The WebAssembly module of the GOST check (../wasm.ts loads it): Streebog and the curve arithmetic. */
export * from './streebog';
export * from './curve';
