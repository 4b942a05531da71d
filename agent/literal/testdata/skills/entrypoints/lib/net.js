exports.post = (url, body) => fetch(url, { method: 'POST', body: JSON.stringify(body) });
