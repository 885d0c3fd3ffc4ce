// The peers and floors the bench measures us against (issue 13), bundled for its page:
// Orama with English stemming and stop words, and idb-keyval.
export { create, insertMultiple, search } from '@orama/orama';
export { stemmer } from '@orama/stemmers/english';
export { stopwords } from '@orama/stopwords/english';
export { set, createStore } from 'idb-keyval';
