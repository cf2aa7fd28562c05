// The MIME tree lives with the store (src/mailstore/mime/parse.ts), which indexes SEARCH's text when it stores a message.
export * from '../../mailstore/mime/parse.js';
