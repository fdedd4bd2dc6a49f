/** The Avro schemas the schema-decoding tests write orders with: a version and its compatible evolution (an optional note). */
export const ORDER_V1 = {
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'cents', type: 'long' },
  ],
};
export const ORDER_V2 = { ...ORDER_V1, fields: [...ORDER_V1.fields, { name: 'note', type: ['null', 'string'], default: null }] };
