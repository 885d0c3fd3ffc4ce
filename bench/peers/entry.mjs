// The peers and floors the bench measures us against (issue 13), bundled for its page:
// Orama with English stemming and stop words, idb-keyval, and unstorage with its
// IndexedDB driver mounted as AIRI mounts it.
export { create, insertMultiple, search } from '@orama/orama';
export { stemmer } from '@orama/stemmers/english';
export { stopwords } from '@orama/stopwords/english';
export { set, createStore, promisifyRequest } from 'idb-keyval';
export { createStorage } from 'unstorage';
export { default as indexedDbDriver } from 'unstorage/drivers/indexedb';
export { default as memoryDriver } from 'unstorage/drivers/memory';
