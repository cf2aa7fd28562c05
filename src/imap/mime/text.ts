// SEARCH's decoded text lives with the store (src/mailstore/mime/text.ts), which indexes it when it stores a message.
export * from '../../mailstore/mime/text.js';
